package fakeaws_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// BenchmarkCreateFleet measures CreateFleet round trips through the real SDK
// client (serialisation, HTTP over loopback, the fake's allocation, XML
// parsing): one instance per call over 15 overrides, the shape the provider
// sends. Instances are terminated as they go so the world stays small.
func BenchmarkCreateFleet(b *testing.B) {
	e := newEnv(b, func(o *fakeaws.Options) { o.DefaultCapacity = 1 << 30 })
	lt := e.launchTemplate(b, "bench", "x86_64", "#!/bin/bash")
	var ovs []ec2types.FleetLaunchTemplateOverridesRequest
	for _, it := range []ec2types.InstanceType{"m5.large", "m5.xlarge", "m6i.large", "c5.large", "r5.large"} {
		for _, sn := range sortedValues(e.subnets(b)) {
			ovs = append(ovs, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: it, SubnetId: aws.String(sn)})
		}
	}
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   ovs,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeSpot},
		SpotOptions:                 &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := e.ec2.CreateFleet(e.ctx, in)
		if err != nil || len(out.Instances) != 1 {
			b.Fatalf("CreateFleet: %v %+v", err, out)
		}
		if i%100 == 99 {
			b.StopTimer()
			if _, err := e.world.TerminateInstances(idsOf(e.world.Instances())); err != nil {
				b.Fatal(err)
			}
			e.clock.Step(2 * 3600e9) // past terminated retention
			e.world.Tick()
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fleets/s")
}

func idsOf(ins []fakeaws.Instance) []string {
	var out []string
	for _, in := range ins {
		if in.State != fakeaws.StateTerminated {
			out = append(out, in.ID)
		}
	}
	return out
}
