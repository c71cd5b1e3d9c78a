// Package upstream runs Kubernetes' own end-to-end specs against the testbed's cluster; which
// specs is chosen by ginkgo's focus (scripts/upstream-e2e runs every `[sig-apps] CronJob`
// one). Nothing upstream is copied: the specs, the framework and its flags are imported from
// k8s.io/kubernetes at the testbed's version. Like the kubeadm e2e suite, and unlike
// test/e2e's own main, it skips the cluster-wide setup (waiting for system pods, nodes'
// images, a cloud provider): the testbed has no kubelet and no kube-system workloads.
package upstream

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"k8s.io/kubernetes/test/e2e/framework"
	e2econfig "k8s.io/kubernetes/test/e2e/framework/config"

	// The specs: every `[sig-apps]` spec registers here; the focus picks the CronJob ones.
	_ "k8s.io/kubernetes/test/e2e/apps"

	// The framework's own configuration, as the upstream suites import it.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/utils/ktesting/format"
)

func TestMain(m *testing.M) {
	e2econfig.CopyFlags(e2econfig.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	if pflag.CommandLine.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown additional command line arguments: %s", pflag.CommandLine.Args())
		os.Exit(1)
	}
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

func TestUpstream(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, "cronshard: upstream e2e specs", suiteConfig, reporterConfig)
}
