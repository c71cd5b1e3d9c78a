//go:build tools

// Package testbed pins the upstream control plane that cronshard's real-server
// tests run against, and the ginkgo runner of upstream's e2e specs (e2e/). Nothing
// here is compiled into cronshard: the blank imports only make `go build` resolve
// these mains from the module cache.
package testbed

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
