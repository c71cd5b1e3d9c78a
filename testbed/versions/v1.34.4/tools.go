//go:build tools

// Package testbed pins Kubernetes v1.34.4's control plane for cronshard's version matrix
// (scripts/kube-testbed build --kube-version v1.34.4). Nothing here is compiled into cronshard:
// the blank imports only make `go build` resolve these mains from the module cache.
package testbed

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
