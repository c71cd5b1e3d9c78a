//go:build tools

// Package kwok pins kwok (Kubernetes WithOut Kubelet), which plays the nodes and pod
// lifecycles of the testbed's whole cluster (`scripts/kube-testbed up --cluster`). A module of
// its own: kwok's k8s.io requirements differ from the control plane's, and it only speaks
// REST to kube-apiserver.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
