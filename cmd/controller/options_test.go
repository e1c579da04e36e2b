package main

import (
	"flag"
	"strings"
	"testing"
	"time"
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
		{name: "no AWS attempts", args: []string{"--cluster-name=lab", "--aws-max-attempts=0"}, wantErr: "--aws-max-attempts"},
		{name: "an attempt timeout inside SQS's long poll", args: []string{"--cluster-name=lab", "--aws-attempt-timeout=10s"}, wantErr: "--aws-attempt-timeout"},
		{name: "the Emptiness gate says what replaced it", args: []string{"--cluster-name=lab", "--feature-gates=Emptiness=false"}, wantErr: `replaced by "Disruption"`},
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
