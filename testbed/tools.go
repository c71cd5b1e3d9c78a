//go:build tools

// Package testbed pins the upstream control plane that cronshard's real-server
// tests run against. Nothing here is compiled into cronshard: the blank imports
// only make `go build` resolve these mains from the module cache.
package testbed

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
