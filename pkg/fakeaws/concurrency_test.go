package fakeaws_test

import (
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// Concurrent clients must neither lose nor double-count capacity: for every
// pool, spare + live instances stays what it started at.
func TestConcurrentClientsConserveCapacity(t *testing.T) {
	e := newEnv(t, func(o *fakeaws.Options) { o.DefaultCapacity = 50 })
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	start := map[fakeaws.PoolKey]int{}
	for _, p := range e.world.Pools() {
		start[p.PoolKey] = p.Spare
	}
	in := e.fleetInput(t, lt, "spot", "price-capacity-optimized", 2, "m5.large", "c5.large")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				// A copy per call: the SDK fills ClientToken into the input it is
				// given, and a shared token would make every call the same fleet.
				req := *in
				out, err := e.ec2.CreateFleet(e.ctx, &req)
				if err != nil {
					errs <- err
					return
				}
				ids := launched(out)
				if _, err := e.ec2.TerminateInstances(e.ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:1]}); err != nil {
					errs <- err
					return
				}
				if _, err := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	live := map[fakeaws.PoolKey]int{}
	n := 0
	for _, in := range e.world.Instances() {
		n++
		if in.State != fakeaws.StateTerminated {
			live[fakeaws.PoolKey{InstanceType: in.Type, Zone: in.Zone, CapacityType: in.CapacityType}]++
		}
	}
	if n != 80 {
		t.Fatalf("%d instances, want 80", n)
	}
	for _, p := range e.world.Pools() {
		if p.Spare+live[p.PoolKey] != start[p.PoolKey] {
			t.Errorf("pool %v: spare %d + live %d != %d", p.PoolKey, p.Spare, live[p.PoolKey], start[p.PoolKey])
		}
	}
}
