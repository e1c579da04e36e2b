package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodesmith/nodesmith/pkg/catalog"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(*Options) string
		wantErr string
	}{
		{name: "defaults", args: []string{"--cluster-name=lab"}, check: func(o *Options) string {
			if o.BatchIdle != time.Second || o.BatchMax != 10*time.Second || !o.LeaderElect || o.MetricsAddr != ":8080" ||
				o.HealthAddr != ":8081" || o.RegistrationTimeout != 15*time.Minute || o.FeatureGates["SpotToSpotConsolidation"] ||
				!o.FeatureGates["Disruption"] || o.DisruptionValidationDelay != 15*time.Second || o.ConsolidationMinSavings != 0.10 {
				return "defaults differ from the documented ones"
			}
			return ""
		}},
		{name: "--version needs no other setting", args: []string{"--version"}, check: func(o *Options) string {
			if !o.Version {
				return "--version not parsed"
			}
			return ""
		}},
		{name: "env supplies values", env: map[string]string{"CLUSTER_NAME": "prod", "BATCH_IDLE_DURATION": "2s", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "LEADER_ELECT": "false"},
			check: func(o *Options) string {
				if o.ClusterName != "prod" || o.BatchIdle != 2*time.Second || o.AWSEndpoint != "http://127.0.0.1:4566" || o.LeaderElect {
					return "environment ignored"
				}
				return ""
			}},
		{name: "flags win over env", args: []string{"--cluster-name=flag"}, env: map[string]string{"CLUSTER_NAME": "env"},
			check: func(o *Options) string {
				if o.ClusterName != "flag" {
					return "flag did not win"
				}
				return ""
			}},
		{name: "feature gates", args: []string{"--cluster-name=lab", "--feature-gates=SpotToSpotConsolidation=true"},
			check: func(o *Options) string {
				if !o.FeatureGates["SpotToSpotConsolidation"] || !o.FeatureGates["Disruption"] {
					return "gates not applied over defaults"
				}
				return ""
			}},
		{name: "node repair gate", args: []string{"--cluster-name=lab", "--feature-gates=NodeRepair=true"},
			check: func(o *Options) string {
				if !o.FeatureGates["NodeRepair"] {
					return "NodeRepair not applied"
				}
				return ""
			}},
		{name: "node repair off by default", args: []string{"--cluster-name=lab"},
			check: func(o *Options) string {
				if on, known := o.FeatureGates["NodeRepair"]; on || !known {
					return "NodeRepair not a known gate, off by default"
				}
				return ""
			}},
		{name: "disruption settings", args: []string{"--cluster-name=lab", "--disruption-validation-delay=30s"}, env: map[string]string{"CONSOLIDATION_MIN_SAVINGS": "0.25"},
			check: func(o *Options) string {
				if o.DisruptionValidationDelay != 30*time.Second || o.ConsolidationMinSavings != 0.25 {
					return "disruption settings ignored"
				}
				return ""
			}},
		{name: "AWS retry defaults", args: []string{"--cluster-name=lab"}, check: func(o *Options) string {
			if o.AWSMaxAttempts != 5 || o.AWSMaxBackoff != 5*time.Second || o.AWSAttemptTimeout != 30*time.Second {
				return "AWS retry defaults changed"
			}
			return ""
		}},
		{name: "AWS retry settings; AWS_MAX_ATTEMPTS as the SDK reads it", args: []string{"--cluster-name=lab", "--aws-max-backoff=20s"},
			env: map[string]string{"AWS_MAX_ATTEMPTS": "8", "AWS_ATTEMPT_TIMEOUT": "45s"},
			check: func(o *Options) string {
				if o.AWSMaxAttempts != 8 || o.AWSMaxBackoff != 20*time.Second || o.AWSAttemptTimeout != 45*time.Second {
					return "AWS retry settings ignored"
				}
				return ""
			}},
		{name: "Karpenter's settings: preference policy, VM overhead, reserved ENIs, client rate, profiling", args: []string{"--cluster-name=lab"},
			env: map[string]string{"PREFERENCE_POLICY": "Ignore", "VM_MEMORY_OVERHEAD_PERCENT": "0.05", "RESERVED_ENIS": "1",
				"KUBE_CLIENT_QPS": "50", "KUBE_CLIENT_BURST": "100", "ENABLE_PROFILING": "true"},
			check: func(o *Options) string {
				if o.PreferencePolicy != "Ignore" || o.VMMemoryOverheadPercent != 0.05 || o.ReservedENIs != 1 ||
					o.KubeClientQPS != 50 || o.KubeClientBurst != 100 || !o.EnableProfiling {
					return "settings ignored"
				}
				return ""
			}},
		{name: "settings defaults", args: []string{"--cluster-name=lab"}, check: func(o *Options) string {
			if o.PreferencePolicy != "Respect" || o.VMMemoryOverheadPercent != 0.075 || o.ReservedENIs != 0 ||
				o.KubeClientQPS != 200 || o.KubeClientBurst != 400 || o.EnableProfiling {
				return "settings defaults differ from the documented ones"
			}
			return ""
		}},
		{name: "an unknown preference policy", args: []string{"--cluster-name=lab", "--preference-policy=Sometimes"}, wantErr: `--preference-policy "Sometimes": want Respect or Ignore`},
		{name: "a VM overhead of 100 %", args: []string{"--cluster-name=lab", "--vm-memory-overhead-percent=1"}, wantErr: "--vm-memory-overhead-percent 1"},
		{name: "negative reserved ENIs", args: []string{"--cluster-name=lab", "--reserved-enis=-1"}, wantErr: "--reserved-enis -1"},
		{name: "a burst below the rate", args: []string{"--cluster-name=lab", "--kube-client-qps=100", "--kube-client-burst=10"}, wantErr: "--kube-client-qps 100 and --kube-client-burst 10"},
		{name: "profiling that is no boolean", env: map[string]string{"CLUSTER_NAME": "lab", "ENABLE_PROFILING": "sure"}, wantErr: `ENABLE_PROFILING="sure"`},
		{name: "no AWS attempts", args: []string{"--cluster-name=lab", "--aws-max-attempts=0"}, wantErr: "--aws-max-attempts"},
		{name: "an attempt timeout inside SQS's long poll", args: []string{"--cluster-name=lab", "--aws-attempt-timeout=10s"}, wantErr: "--aws-attempt-timeout"},
		{name: "the Emptiness gate says what replaced it", args: []string{"--cluster-name=lab", "--feature-gates=Emptiness=false"}, wantErr: `replaced by "Disruption"`},
		{name: "node repair without disruption", args: []string{"--cluster-name=lab", "--feature-gates=NodeRepair=true,Disruption=false"}, wantErr: "NodeRepair=true needs Disruption=true"},
		{name: "a savings share above 1", args: []string{"--cluster-name=lab", "--consolidation-min-savings=10"}, wantErr: "--consolidation-min-savings"},
		{name: "a savings share that is no number", env: map[string]string{"CLUSTER_NAME": "lab", "CONSOLIDATION_MIN_SAVINGS": "ten percent"}, wantErr: "CONSOLIDATION_MIN_SAVINGS"},
		{name: "cluster name required", wantErr: "--cluster-name"},
		{name: "unknown gate", args: []string{"--cluster-name=lab", "--feature-gates=Teleport=true"}, wantErr: "unknown feature gate"},
		{name: "bad batch windows", args: []string{"--cluster-name=lab", "--batch-idle-duration=5s", "--batch-max-duration=1s"}, wantErr: "batch windows"},
		{name: "bad env duration", env: map[string]string{"BATCH_MAX_DURATION": "soon"}, wantErr: "BATCH_MAX_DURATION"},
		{name: "discovery and refresh defaults", args: []string{"--cluster-name=lab"}, check: func(o *Options) string {
			if o.ClusterEndpoint != "" || o.ClusterServiceCIDR != "" || o.KubernetesVersion != "" || o.SpotPriceInterval != 5*time.Minute || o.CatalogInterval != 12*time.Hour {
				return "discovery must be on and refreshes at 5m / 12h by default"
			}
			return ""
		}},
		{name: "bad kubernetes version", args: []string{"--cluster-name=lab", "--kubernetes-version=v1.37.2"}, wantErr: "--kubernetes-version"},
		{name: "bad log level", args: []string{"--cluster-name=lab", "--log-level=loud"}, wantErr: "--log-level"},
		{name: "interruption defaults", args: []string{"--cluster-name=lab"}, check: func(o *Options) string {
			if o.InterruptionQueue != "" || o.InterruptionWorkers != 10 || o.RebalanceMode != "prespin" {
				return "interruption defaults differ from the documented ones"
			}
			return ""
		}},
		{name: "interruption settings from env", env: map[string]string{"CLUSTER_NAME": "lab", "INTERRUPTION_QUEUE": "q", "INTERRUPTION_WORKERS": "4", "REBALANCE_MODE": "drain", "POD_NAME": "nodesmith-0"},
			check: func(o *Options) string {
				if o.InterruptionQueue != "q" || o.InterruptionWorkers != 4 || o.RebalanceMode != "drain" || o.PodName != "nodesmith-0" {
					return "interruption environment ignored"
				}
				return ""
			}},
		{name: "bad rebalance mode", args: []string{"--cluster-name=lab", "--rebalance-mode=sometimes"}, wantErr: "--rebalance-mode"},
		{name: "no interruption workers", args: []string{"--cluster-name=lab", "--interruption-workers=0"}, wantErr: "--interruption-workers"},
		{name: "bad workers env", env: map[string]string{"CLUSTER_NAME": "lab", "INTERRUPTION_WORKERS": "many"}, wantErr: "INTERRUPTION_WORKERS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o, err := parse(fs, tt.args, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(o); msg != "" {
				t.Fatalf("%s: %+v", msg, o)
			}
		})
	}
}

// The catalog reads a VM overhead of 0 as "the default"; an explicit 0 must
// reach it as no overhead at all, and the shares must change allocatable.
func TestCatalogOptionsShapeAllocatable(t *testing.T) {
	specs, err := catalog.Specs()
	if err != nil {
		t.Fatal(err)
	}
	var spec catalog.Spec
	for _, s := range specs {
		if s.Name == "m5.large" {
			spec = s
		}
	}
	if spec.Name == "" {
		t.Fatal("m5.large is not in the embedded catalog")
	}
	memory := func(o *Options) int64 {
		it := catalog.NewInstanceType(spec, nil, catalogOptions(o))
		q := it.Allocatable()[corev1.ResourceMemory]
		return q.Value()
	}
	pods := func(o *Options) int64 {
		it := catalog.NewInstanceType(spec, nil, catalogOptions(o))
		q := it.Allocatable()[corev1.ResourcePods]
		return q.Value()
	}
	def, none := memory(&Options{VMMemoryOverheadPercent: 0.075}), memory(&Options{VMMemoryOverheadPercent: 0})
	if none <= def {
		t.Errorf("allocatable memory with no VM overhead %d, with 7.5 %% %d: an explicit 0 was read as the default", none, def)
	}
	if p0, p1 := pods(&Options{VMMemoryOverheadPercent: 0.075}), pods(&Options{VMMemoryOverheadPercent: 0.075, ReservedENIs: 1}); p1 >= p0 {
		t.Errorf("max pods %d with one reserved ENI, %d without", p1, p0)
	}
	if profilingHandlers(false) != nil || profilingHandlers(true)["/debug/pprof/"] == nil {
		t.Error("pprof handlers not served exactly when profiling is on")
	}
}

// TestVersionLine: --version names the binary, a version and a commit.
func TestVersionLine(t *testing.T) {
	line := versionLine()
	if !strings.HasPrefix(line, "nodesmith-controller ") || !strings.Contains(line, "(commit ") {
		t.Errorf("--version prints %q, want the binary's name, a version and a commit", line)
	}
}
