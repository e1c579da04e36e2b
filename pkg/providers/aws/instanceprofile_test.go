package aws

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

var managedProfile = ManagedInstanceProfileName(testCluster, catalog.DefaultRegion, "default")

// iamCalls are the IAM call counts of a world, without the "iam:" prefix.
func iamCalls(w *fakeaws.World) map[string]int {
	out := map[string]int{}
	for k, v := range w.Stats() {
		if name, ok := strings.CutPrefix(k, "iam:"); ok {
			out[name] = v
		}
	}
	return out
}

func wantTags() map[string]string {
	return map[string]string{"team": "infra", awsv1.TagCluster: testCluster, awsv1.LabelEC2NodeClass: "default"}
}

func TestManagedInstanceProfileName(t *testing.T) {
	base := ManagedInstanceProfileName("lab", "us-east-1", "default")
	if !strings.HasPrefix(base, "lab_") || len(base) != len("lab_")+16 {
		t.Fatalf("name = %q, want lab_<16 hex>", base)
	}
	for _, other := range []string{
		ManagedInstanceProfileName("lab2", "us-east-1", "default"),
		ManagedInstanceProfileName("lab", "eu-west-1", "default"),
		ManagedInstanceProfileName("lab", "us-east-1", "gpu"),
	} {
		if other == base {
			t.Errorf("%q collides with %q", other, base)
		}
	}
	if again := ManagedInstanceProfileName("lab", "us-east-1", "default"); again != base {
		t.Errorf("not deterministic: %q then %q", base, again)
	}
}

func TestResolveCreatesTheManagedInstanceProfile(t *testing.T) {
	e := newEnv(t, envOpts{iam: true})
	e.world.AddRole("NodeRole")
	r, err := e.p.Resolve(e.ctx, defaultNodeClass())
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if r.InstanceProfile != managedProfile {
		t.Fatalf("profile = %q, want %q", r.InstanceProfile, managedProfile)
	}
	ip, ok := e.world.GetInstanceProfile(managedProfile)
	if !ok {
		t.Fatal("the profile Resolve reported does not exist in IAM")
	}
	if !reflect.DeepEqual(ip.Roles, []string{"NodeRole"}) || !reflect.DeepEqual(ip.Tags, wantTags()) || ip.Path != instanceProfilePath {
		t.Fatalf("profile = %+v", ip)
	}
	// Tags go on with the create: no separate TagInstanceProfile.
	want := map[string]int{"GetInstanceProfile": 1, "CreateInstanceProfile": 1, "AddRoleToInstanceProfile": 1}
	if got := iamCalls(e.world); !reflect.DeepEqual(got, want) {
		t.Fatalf("first resolve calls = %v, want %v", got, want)
	}
	if _, err := e.p.Resolve(e.ctx, defaultNodeClass()); err != nil {
		t.Fatal(err)
	}
	if got := iamCalls(e.world); !reflect.DeepEqual(got, want) {
		t.Fatalf("a second resolve within the TTL called IAM: %v", got)
	}
	e.clock.Step(instanceProfileTTL + time.Second)
	if _, err := e.p.Resolve(e.ctx, defaultNodeClass()); err != nil {
		t.Fatal(err)
	}
	want["GetInstanceProfile"]++
	if got := iamCalls(e.world); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the TTL calls = %v, want only one more GetInstanceProfile: %v", got, want)
	}
	// A changed tag is a changed spec: looked at again, and only the tag is written.
	nc := defaultNodeClass()
	nc.Spec.Tags["team"] = "platform"
	if _, err := e.p.Resolve(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if ip, _ := e.world.GetInstanceProfile(managedProfile); ip.Tags["team"] != "platform" {
		t.Fatalf("tags = %v, want team=platform", ip.Tags)
	}
	if got := iamCalls(e.world); got["TagInstanceProfile"] != 1 || got["CreateInstanceProfile"] != 1 || got["AddRoleToInstanceProfile"] != 1 {
		t.Fatalf("calls after a tag change = %v", got)
	}
}

func TestResolveAdoptsAnExistingInstanceProfile(t *testing.T) {
	tests := []struct {
		name      string
		roles     []string
		tags      map[string]string
		wantCalls map[string]int
	}{
		{name: "empty and untagged", wantCalls: map[string]int{"GetInstanceProfile": 1, "AddRoleToInstanceProfile": 1, "TagInstanceProfile": 1}},
		{name: "already in order", roles: []string{"NodeRole"}, tags: wantTags(), wantCalls: map[string]int{"GetInstanceProfile": 1}},
		{name: "holding the old role", roles: []string{"OldRole"}, tags: wantTags(),
			wantCalls: map[string]int{"GetInstanceProfile": 1, "RemoveRoleFromInstanceProfile": 1, "AddRoleToInstanceProfile": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{iam: true})
			e.world.AddRole("NodeRole")
			if _, err := e.world.CreateInstanceProfile(managedProfile, "/", tt.tags); err != nil {
				t.Fatal(err)
			}
			for _, r := range tt.roles {
				e.world.AddRole(r)
				if err := e.world.AddRoleToInstanceProfile(managedProfile, r); err != nil {
					t.Fatal(err)
				}
			}
			r, err := e.p.Resolve(e.ctx, defaultNodeClass())
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if r.InstanceProfile != managedProfile {
				t.Errorf("profile = %q", r.InstanceProfile)
			}
			if got := iamCalls(e.world); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", got, tt.wantCalls)
			}
			ip, _ := e.world.GetInstanceProfile(managedProfile)
			if !reflect.DeepEqual(ip.Roles, []string{"NodeRole"}) || !reflect.DeepEqual(ip.Tags, wantTags()) {
				t.Errorf("profile after adoption = %+v", ip)
			}
		})
	}
}

func TestResolveInstanceProfileErrors(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(e *env)
		mutate     func(nc *awsv1.EC2NodeClass)
		noRole     bool // the node role is not created
		wantReason string
		wantText   []string
	}{
		{name: "spec.instanceProfile missing", mutate: userProfile,
			wantReason: "InstanceProfileNotFound", wantText: []string{"instance profile my-profile not found: create it or set spec.role"}},
		{name: "spec.instanceProfile without a role", mutate: userProfile,
			setup:      func(e *env) { mustCreateProfile(e, "my-profile") },
			wantReason: "InstanceProfileHasNoRole", wantText: []string{"my-profile has no role"}},
		{name: "the role does not exist", noRole: true,
			wantReason: "RoleNotFound", wantText: []string{"role NodeRole not found: create the node role or fix spec.role"}},
		{name: "GetInstanceProfile denied", setup: deny("iam:GetInstanceProfile"),
			wantReason: "GetInstanceProfileFailed", wantText: []string{"AccessDenied", "needs iam:GetInstanceProfile"}},
		{name: "CreateInstanceProfile denied", setup: deny("iam:CreateInstanceProfile"),
			wantReason: "CreateInstanceProfileFailed", wantText: []string{"AccessDenied", "needs iam:CreateInstanceProfile and iam:TagInstanceProfile"}},
		{name: "AddRoleToInstanceProfile denied", setup: deny("iam:AddRoleToInstanceProfile"),
			wantReason: "AddRoleFailed", wantText: []string{"AccessDenied", "needs iam:AddRoleToInstanceProfile and iam:PassRole on role NodeRole"}},
		{name: "TagInstanceProfile denied on an adopted profile", setup: func(e *env) {
			deny("iam:TagInstanceProfile")(e)
			mustCreateProfile(e, managedProfile)
		}, wantReason: "TagInstanceProfileFailed", wantText: []string{"AccessDenied", "needs iam:TagInstanceProfile"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{iam: true})
			if tt.setup != nil {
				tt.setup(e)
			}
			if !tt.noRole {
				e.world.AddRole("NodeRole")
			}
			nc := defaultNodeClass()
			if tt.mutate != nil {
				tt.mutate(nc)
			}
			_, err := e.p.Resolve(e.ctx, nc)
			var re *ResolveError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a ResolveError", err)
			}
			if re.Condition != awsv1.ConditionInstanceProfileReady || re.Reason != tt.wantReason {
				t.Errorf("condition %s reason %s, want %s %s", re.Condition, re.Reason, awsv1.ConditionInstanceProfileReady, tt.wantReason)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

func TestResolveAcceptsAnExistingUserInstanceProfile(t *testing.T) {
	e := newEnv(t, envOpts{iam: true})
	mustCreateProfile(e, "my-profile")
	if err := e.world.AddRoleToInstanceProfile("my-profile", fakeaws.NodeRoleName(testCluster)); err != nil {
		t.Fatal(err)
	}
	nc := defaultNodeClass()
	userProfile(nc)
	r, err := e.p.Resolve(e.ctx, nc)
	if err != nil || r.InstanceProfile != "my-profile" {
		t.Fatalf("Resolve = %v, %v; want my-profile", r, err)
	}
	if got := iamCalls(e.world); !reflect.DeepEqual(got, map[string]int{"GetInstanceProfile": 1}) {
		t.Fatalf("calls = %v, want one GetInstanceProfile and nothing written", got)
	}
}

func userProfile(nc *awsv1.EC2NodeClass) {
	nc.Spec.Role, nc.Spec.InstanceProfile = nil, aws.String("my-profile")
}

func mustCreateProfile(e *env, name string) {
	e.t.Helper()
	if _, err := e.world.CreateInstanceProfile(name, "/", nil); err != nil {
		e.t.Fatal(err)
	}
}

func deny(action string) func(e *env) {
	return func(e *env) { e.world.InjectAccessDenied(action, 1) }
}

func TestLaunchNeedsAnExistingInstanceProfile(t *testing.T) {
	enforce := func(o *fakeaws.Options) { o.EnforceInstanceProfiles = true }
	t.Run("without IAM the missing profile fails the launch with the hint", func(t *testing.T) {
		e := newEnv(t, envOpts{world: enforce})
		_, err := e.p.Create(e.ctx, newClaim("c1"))
		if err == nil {
			t.Fatal("Create succeeded with a profile IAM does not have")
		}
		for _, s := range []string{"InvalidParameterValue", "iamInstanceProfile.name", "set spec.role so Nodesmith creates one"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q lacks %q", err, s)
			}
		}
		if n := len(e.fleetCalls()); n != 1 {
			t.Errorf("fleet calls = %d, want 1: no other offering fixes a missing profile", n)
		}
	})
	t.Run("with IAM the profile is made before the launch", func(t *testing.T) {
		e := newEnv(t, envOpts{world: enforce, iam: true})
		e.world.AddRole("NodeRole")
		e.create(newClaim("c1"))
		if n := len(e.world.Instances()); n != 1 {
			t.Fatalf("instances = %d, want 1", n)
		}
	})
}

func TestDeleteInstanceProfile(t *testing.T) {
	tests := []struct {
		name string
		// setup runs after a first Resolve made the managed profile.
		setup       func(e *env)
		mutate      func(nc *awsv1.EC2NodeClass)
		vanish      bool // the profile is deleted behind our back after our read
		wantErr     string
		wantLeft    bool
		wantRemoves int
		wantDeletes int
	}{
		{name: "removes the role, then the profile", wantRemoves: 1, wantDeletes: 1},
		{name: "already gone", setup: func(e *env) {
			_ = e.world.RemoveRoleFromInstanceProfile(managedProfile, "NodeRole")
			_ = e.world.DeleteInstanceProfile(managedProfile)
		}},
		{name: "a profile without a role", setup: func(e *env) {
			_ = e.world.RemoveRoleFromInstanceProfile(managedProfile, "NodeRole")
		}, wantDeletes: 1},
		{name: "deleted by someone else between our read and our delete", vanish: true, wantRemoves: 1, wantDeletes: 1},
		{name: "switched to spec.instanceProfile: our tagged profile still goes", mutate: userProfile, wantRemoves: 1, wantDeletes: 1},
		{name: "switched to spec.instanceProfile: an untagged profile of that name stays", mutate: userProfile, setup: func(e *env) {
			_ = e.world.RemoveRoleFromInstanceProfile(managedProfile, "NodeRole")
			_ = e.world.DeleteInstanceProfile(managedProfile)
			mustCreateProfile(e, managedProfile)
		}, wantLeft: true},
		{name: "DeleteInstanceProfile denied", setup: deny("iam:DeleteInstanceProfile"),
			wantErr: "needs iam:DeleteInstanceProfile", wantLeft: true, wantRemoves: 1, wantDeletes: 1},
		{name: "RemoveRoleFromInstanceProfile denied", setup: deny("iam:RemoveRoleFromInstanceProfile"),
			wantErr: "needs iam:RemoveRoleFromInstanceProfile", wantLeft: true, wantRemoves: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var world *fakeaws.World
			var armed atomic.Bool
			e := newEnv(t, envOpts{iam: true, wrap: func(h http.Handler) http.Handler {
				return vanishAfterGet(h, func() *fakeaws.World {
					if armed.Load() {
						return world
					}
					return nil
				})
			}})
			world = e.world
			e.world.AddRole("NodeRole")
			if _, err := e.p.Resolve(e.ctx, defaultNodeClass()); err != nil {
				t.Fatal(err)
			}
			if tt.setup != nil {
				tt.setup(e)
			}
			nc := defaultNodeClass()
			if tt.mutate != nil {
				tt.mutate(nc)
			}
			before := iamCalls(e.world)
			armed.Store(tt.vanish)
			err := e.p.DeleteInstanceProfile(e.ctx, nc)
			armed.Store(false)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("DeleteInstanceProfile: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			after := iamCalls(e.world)
			if n := after["RemoveRoleFromInstanceProfile"] - before["RemoveRoleFromInstanceProfile"]; n != tt.wantRemoves {
				t.Errorf("RemoveRoleFromInstanceProfile calls = %d, want %d", n, tt.wantRemoves)
			}
			if n := after["DeleteInstanceProfile"] - before["DeleteInstanceProfile"]; n != tt.wantDeletes {
				t.Errorf("DeleteInstanceProfile calls = %d, want %d", n, tt.wantDeletes)
			}
			if _, left := e.world.GetInstanceProfile(managedProfile); left != tt.wantLeft {
				t.Errorf("profile left = %v, want %v", left, tt.wantLeft)
			}
			if tt.wantErr != "" {
				// The finalizer retries; the fault was one call, so the retry finishes.
				if err := e.p.DeleteInstanceProfile(e.ctx, nc); err != nil {
					t.Fatalf("retry: %v", err)
				}
				if _, left := e.world.GetInstanceProfile(managedProfile); left {
					t.Error("the retry left the profile")
				}
			}
		})
	}
}

// vanishAfterGet deletes the managed profile right after IAM answered a
// GetInstanceProfile, as a concurrent deleter would, while armed returns a
// world.
func vanishAfterGet(h http.Handler, armed func() *fakeaws.World) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := armed()
		if w == nil {
			h.ServeHTTP(rw, r)
			return
		}
		before := w.Stats()["iam:GetInstanceProfile"]
		h.ServeHTTP(rw, r)
		if w.Stats()["iam:GetInstanceProfile"] > before {
			if ip, ok := w.GetInstanceProfile(managedProfile); ok {
				for _, role := range ip.Roles {
					_ = w.RemoveRoleFromInstanceProfile(managedProfile, role)
				}
				_ = w.DeleteInstanceProfile(managedProfile)
			}
		}
	})
}

func TestDeleteInstanceProfileWithoutIAMDoesNothing(t *testing.T) {
	e := newEnv(t, envOpts{})
	if _, err := e.world.CreateInstanceProfile(managedProfile, "/", nil); err != nil {
		t.Fatal(err)
	}
	if err := e.p.DeleteInstanceProfile(e.ctx, defaultNodeClass()); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.world.GetInstanceProfile(managedProfile); !ok {
		t.Fatal("a provider without an IAM client deleted a profile")
	}
	if _, err := e.p.Resolve(e.ctx, defaultNodeClass()); err != nil {
		t.Fatal(err)
	}
	if got := iamCalls(e.world); len(got) != 0 {
		t.Fatalf("IAM calls without an IAM client: %v", got)
	}
}

func TestConcurrentResolvesMakeOneProfile(t *testing.T) {
	e := newEnv(t, envOpts{iam: true})
	e.world.AddRole("NodeRole")
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := e.p.Resolve(e.ctx, defaultNodeClass())
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Resolve: %v", err)
		}
	}
	if got := iamCalls(e.world); got["CreateInstanceProfile"] != 1 || got["AddRoleToInstanceProfile"] != 1 {
		t.Fatalf("calls = %v, want one create and one add-role", got)
	}
}

func TestAnotherWriterAddingOurRoleFirstIsFine(t *testing.T) {
	var world *fakeaws.World
	e := newEnv(t, envOpts{iam: true, wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte("Action=AddRoleToInstanceProfile")) {
				// The other controller wins the race.
				_ = world.AddRoleToInstanceProfile(managedProfile, "NodeRole")
			}
			h.ServeHTTP(rw, r)
		})
	}})
	world = e.world
	e.world.AddRole("NodeRole")
	if _, err := e.p.Resolve(e.ctx, defaultNodeClass()); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	got := iamCalls(e.world)
	if got["AddRoleToInstanceProfile"] != 1 || got["GetInstanceProfile"] != 2 {
		t.Fatalf("calls = %v, want the LimitExceeded add-role followed by a re-read", got)
	}
}
