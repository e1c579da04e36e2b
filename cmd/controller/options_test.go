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
				o.HealthAddr != ":8081" || o.RegistrationTimeout != 15*time.Minute || o.FeatureGates["SpotToSpotConsolidation"] {
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
				if !o.FeatureGates["SpotToSpotConsolidation"] || !o.FeatureGates["Emptiness"] {
					return "gates not applied over defaults"
				}
				return ""
			}},
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
