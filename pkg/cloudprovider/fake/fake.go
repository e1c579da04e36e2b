package fake

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
)

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// Call is one recorded call.
type Call struct {
	Method string // Create, Delete, Get, List, GetInstanceTypes
	// Name is the claim name (Create, Delete), the providerID (Get) or the pool name (GetInstanceTypes).
	Name string
	// LaunchAttempt is the claim's launch attempt (Create).
	LaunchAttempt int
}

// CloudProvider is the recording fake. Set the exported fields before use or
// under Lock; the methods are safe for concurrent use.
type CloudProvider struct {
	mu sync.Mutex

	// InstanceTypes returned by GetInstanceTypes; Create launches the first
	// type whose name the claim's instance-type requirement allows.
	InstanceTypes []*catalog.InstanceType
	// CreateErr, when set, is returned by every Create.
	CreateErr error
	// NextCreateErrs are returned by the next Create calls, one each, before CreateErr.
	NextCreateErrs []error
	// DeleteErr, when set, is returned by every Delete.
	DeleteErr error
	// GetErr, when set, is returned by every Get.
	GetErr error
	// ListErr, when set, is returned by every List.
	ListErr error

	calls     []Call
	instances map[string]*nsv1.NodeClaim // by providerID
	byClaim   map[string]string          // claim name -> providerID
}

// seq numbers instances across every fake in the process, so fakes sharing
// one API server never hand out the same providerID.
var seq atomic.Int64

// New returns a fake with the given instance types.
func New(types ...*catalog.InstanceType) *CloudProvider {
	return &CloudProvider{InstanceTypes: types, instances: map[string]*nsv1.NodeClaim{}, byClaim: map[string]string{}}
}

// InstanceType builds a simple instance type with one on-demand and one spot
// offering per zone (spot at 30% of the on-demand price).
func InstanceType(name string, cpu, memGi int64, price float64, zones ...string) *catalog.InstanceType {
	it := &catalog.InstanceType{
		Name: name, Arch: "amd64", VCPU: int(cpu), MemoryMiB: memGi * 1024, OnDemandPrice: price,
		Labels: map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		},
	}
	for _, z := range zones {
		it.Offerings = append(it.Offerings,
			catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeOnDemand, Price: price, Available: true},
			catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeSpot, Price: price * 0.3, Available: true})
	}
	return it
}

func (f *CloudProvider) record(method, name string) {
	f.calls = append(f.calls, Call{Method: method, Name: name})
}

// Calls returns the recorded calls of method ("" for all).
func (f *CloudProvider) Calls(method string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Lock and Unlock guard the exported fields while a controller is running.
func (f *CloudProvider) Lock()   { f.mu.Lock() }
func (f *CloudProvider) Unlock() { f.mu.Unlock() }

// Instances returns the running instances, sorted by providerID.
func (f *CloudProvider) Instances() []*nsv1.NodeClaim {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*nsv1.NodeClaim, 0, len(f.instances))
	for _, c := range f.instances {
		out = append(out, c.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Status.ProviderID < out[j].Status.ProviderID })
	return out
}

// AddInstance injects an instance the cluster did not launch through Create
// (an orphan for garbage collection tests).
func (f *CloudProvider) AddInstance(claimName string, launched time.Time) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("fake:///zone-a/i-%06d", seq.Add(1))
	f.instances[id] = &nsv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName, CreationTimestamp: metav1.NewTime(launched)},
		Status:     nsv1.NodeClaimStatus{ProviderID: id},
	}
	return id
}

// SetInstance changes an instance as the cloud would read it from now on
// (its capacity type once its reservation ended, say).
func (f *CloudProvider) SetInstance(providerID string, mutate func(*nsv1.NodeClaim)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.instances[providerID]; ok {
		mutate(c)
	}
}

// AddUnclaimedInstance injects an instance a shared launch started for the
// given claims that none of them has taken yet (its answer was lost): List
// shows it with no name and the claims' launch keys
// (cloudprovider.AnnotationLaunchBatch).
func (f *CloudProvider) AddUnclaimedInstance(launched time.Time, members ...*nsv1.NodeClaim) string {
	keys := make([]string, len(members))
	for i, m := range members {
		keys[i] = cloudprovider.LaunchKey(m)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("fake:///zone-a/i-%06d", seq.Add(1))
	f.instances[id] = &nsv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(launched),
			Annotations: map[string]string{cloudprovider.AnnotationLaunchBatch: strings.Join(keys, " ")}},
		Status: nsv1.NodeClaimStatus{ProviderID: id},
	}
	return id
}

// RemoveInstance makes an instance vanish behind the controller's back.
func (f *CloudProvider) RemoveInstance(providerID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.instances[providerID]; ok {
		delete(f.byClaim, c.Name)
		delete(f.instances, providerID)
	}
}

// Create launches (or, for a claim already launched, returns) an instance.
// CreateAll runs Create for each claim in order (recorded as Create calls).
func (f *CloudProvider) CreateAll(ctx context.Context, claims []*nsv1.NodeClaim) []cloudprovider.CreateResult {
	out := make([]cloudprovider.CreateResult, len(claims))
	for i, c := range claims {
		out[i].Claim, out[i].Err = f.Create(ctx, c)
	}
	return out
}

func (f *CloudProvider) Create(_ context.Context, claim *nsv1.NodeClaim) (*nsv1.NodeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Method: "Create", Name: claim.Name, LaunchAttempt: cloudprovider.LaunchAttempt(claim)})
	if len(f.NextCreateErrs) > 0 {
		err := f.NextCreateErrs[0]
		f.NextCreateErrs = f.NextCreateErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	if f.CreateErr != nil {
		return nil, f.CreateErr
	}
	if id, ok := f.byClaim[claim.Name]; ok {
		return f.instances[id].DeepCopy(), nil
	}
	it, off, err := f.pick(claim)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("fake:///%s/i-%06d", off.Zone, seq.Add(1))
	out := claim.DeepCopy()
	out.Status.ProviderID = id
	out.Status.InstanceType = it.Name
	out.Status.Zone = off.Zone
	out.Status.CapacityType = off.CapacityType
	out.Status.ImageID = "ami-fake"
	out.Status.Price = nsv1.FormatPrice(off.Price)
	out.Status.Capacity = it.Capacity.DeepCopy()
	out.Status.Allocatable = it.Capacity.DeepCopy()
	f.instances[id] = out.DeepCopy()
	f.byClaim[claim.Name] = id
	return out, nil
}

// pick returns the cheapest available offering of an allowed type.
func (f *CloudProvider) pick(claim *nsv1.NodeClaim) (*catalog.InstanceType, catalog.Offering, error) {
	var bestIT *catalog.InstanceType
	var best catalog.Offering
	for _, it := range f.InstanceTypes {
		if !allowed(claim, corev1.LabelInstanceTypeStable, it.Name) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || !allowed(claim, corev1.LabelTopologyZone, o.Zone) || !allowed(claim, nsv1.LabelCapacityType, o.CapacityType) {
				continue
			}
			if bestIT == nil || o.Price < best.Price {
				bestIT, best = it, o
			}
		}
	}
	if bestIT == nil {
		return nil, catalog.Offering{}, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no available offering for nodeclaim %s", claim.Name))
	}
	return bestIT, best, nil
}

func allowed(claim *nsv1.NodeClaim, key, value string) bool {
	for _, r := range claim.Spec.Requirements {
		if r.Key != key {
			continue
		}
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			if !contains(r.Values, value) {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			if contains(r.Values, value) {
				return false
			}
		}
	}
	return true
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// Delete terminates the claim's instance.
func (f *CloudProvider) Delete(_ context.Context, claim *nsv1.NodeClaim) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Delete", claim.Name)
	if f.DeleteErr != nil {
		return f.DeleteErr
	}
	id := claim.Status.ProviderID
	if id == "" {
		id = f.byClaim[claim.Name]
	}
	c, ok := f.instances[id]
	if !ok {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q of nodeclaim %s not found", id, claim.Name))
	}
	delete(f.byClaim, c.Name)
	delete(f.instances, id)
	return nil
}

// Get returns the instance with providerID.
func (f *CloudProvider) Get(_ context.Context, providerID string) (*nsv1.NodeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Get", providerID)
	if f.GetErr != nil {
		return nil, f.GetErr
	}
	c, ok := f.instances[providerID]
	if !ok {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q not found", providerID))
	}
	return c.DeepCopy(), nil
}

// List returns every instance.
func (f *CloudProvider) List(context.Context) ([]*nsv1.NodeClaim, error) {
	f.mu.Lock()
	f.record("List", "")
	err := f.ListErr
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.Instances(), nil
}

// GetInstanceTypes returns InstanceTypes.
func (f *CloudProvider) GetInstanceTypes(_ context.Context, pool *nsv1.NodePool) ([]*catalog.InstanceType, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("GetInstanceTypes", pool.Name)
	return f.InstanceTypes, nil
}

// Name is "fake".
func (f *CloudProvider) Name() string { return "fake" }
