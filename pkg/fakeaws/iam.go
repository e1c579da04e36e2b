package fakeaws

import (
	"crypto/sha256"
	"encoding/base32"
	"sort"
	"strings"
	"time"
)

// Role is an IAM role the world knows. The fake keeps only what instance
// profiles need: a role has no policies and nothing checks that EC2 may
// assume it.
type Role struct {
	Name       string
	ID         string
	Arn        string
	CreateDate time.Time
}

// InstanceProfile is an IAM instance profile: a name EC2 launches with and
// at most one role.
type InstanceProfile struct {
	Name       string
	ID         string
	Arn        string
	Path       string
	CreateDate time.Time
	Roles      []string
	Tags       map[string]string
}

// iamModel is the world's IAM state. Its maps are made on first use so a
// World built without IAM in mind pays nothing.
type iamModel struct {
	roles    map[string]*Role
	profiles map[string]*InstanceProfile
	// denied counts the next calls, per "iam:<Action>" key, answered with AccessDenied.
	denied map[string]int
}

func (m *iamModel) init() {
	if m.roles == nil {
		m.roles = map[string]*Role{}
		m.profiles = map[string]*InstanceProfile{}
		m.denied = map[string]int{}
	}
}

// NodeRoleName is the role NewWorld pre-creates when Options.ClusterName is
// set, standing in for the node role an EKS cluster's setup creates.
func NodeRoleName(cluster string) string { return cluster + "-node-role" }

// seedIAM pre-creates the configured roles.
func (w *World) seedIAM(o Options) {
	if o.ClusterName != "" {
		w.addRoleLocked(NodeRoleName(o.ClusterName))
	}
	for _, r := range o.Roles {
		w.addRoleLocked(r)
	}
}

// AddRole creates a role if it does not exist and returns it.
func (w *World) AddRole(name string) Role {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *w.addRoleLocked(name)
}

func (w *World) addRoleLocked(name string) *Role {
	w.iam.init()
	if r, ok := w.iam.roles[name]; ok {
		return r
	}
	r := &Role{Name: name, ID: iamID("AROA", name, w.clock.Now()), Arn: w.iamArn("role", "/", name), CreateDate: w.clock.Now()}
	w.iam.roles[name] = r
	return r
}

// InstanceProfiles returns a snapshot of every instance profile, by name.
func (w *World) InstanceProfiles() []InstanceProfile {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]InstanceProfile, 0, len(w.iam.profiles))
	for _, p := range w.iam.profiles {
		out = append(out, cloneProfile(p))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// GetInstanceProfile returns one instance profile snapshot.
func (w *World) GetInstanceProfile(name string) (InstanceProfile, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.iam.profiles[name]
	if !ok {
		return InstanceProfile{}, false
	}
	return cloneProfile(p), true
}

// InjectAccessDenied makes the next n calls of an IAM action (the Stats key,
// "iam:CreateInstanceProfile") fail with AccessDenied, as when the caller's
// policy lacks that permission.
func (w *World) InjectAccessDenied(action string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.iam.init()
	w.iam.denied[action] += n
}

// denyLocked consumes one injected AccessDenied for key.
func (w *World) denyLocked(key string) bool {
	if w.iam.denied[key] > 0 {
		w.iam.denied[key]--
		return true
	}
	return false
}

// CreateInstanceProfile creates an empty profile; the name is unique in the account.
func (w *World) CreateInstanceProfile(name, path string, tags map[string]string) (InstanceProfile, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.iam.init()
	if name == "" {
		return InstanceProfile{}, iamErr(400, "ValidationError", "1 validation error detected: Value null at 'instanceProfileName' failed to satisfy constraint: Member must not be null")
	}
	if _, ok := w.iam.profiles[name]; ok {
		return InstanceProfile{}, iamErr(409, "EntityAlreadyExists", "Instance Profile %s already exists.", name)
	}
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") || !strings.HasSuffix(path, "/") {
		return InstanceProfile{}, iamErr(400, "ValidationError", "The specified value for path is invalid. It must begin and end with / and contain only alphanumeric characters and/or / characters.")
	}
	p := &InstanceProfile{Name: name, ID: iamID("AIPA", name, w.clock.Now()), Arn: w.iamArn("instance-profile", path, name),
		Path: path, CreateDate: w.clock.Now(), Tags: cloneTags(tags)}
	w.iam.profiles[name] = p
	return cloneProfile(p), nil
}

// AddRoleToInstanceProfile puts a role into a profile, which holds at most one.
func (w *World) AddRoleToInstanceProfile(profile, role string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, err := w.profileLocked(profile)
	if err != nil {
		return err
	}
	if _, ok := w.iam.roles[role]; !ok {
		return iamErr(404, "NoSuchEntity", "The role with name %s cannot be found.", role)
	}
	if len(p.Roles) > 0 {
		return iamErr(409, "LimitExceeded", "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
	}
	p.Roles = append(p.Roles, role)
	return nil
}

// RemoveRoleFromInstanceProfile takes a role out of a profile.
func (w *World) RemoveRoleFromInstanceProfile(profile, role string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, err := w.profileLocked(profile)
	if err != nil {
		return err
	}
	for i, r := range p.Roles {
		if r == role {
			p.Roles = append(p.Roles[:i], p.Roles[i+1:]...)
			return nil
		}
	}
	return iamErr(404, "NoSuchEntity", "Role %s in Instance Profile %s cannot be found.", role, profile)
}

// DeleteInstanceProfile deletes a profile that holds no role.
func (w *World) DeleteInstanceProfile(profile string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, err := w.profileLocked(profile)
	if err != nil {
		return err
	}
	if len(p.Roles) > 0 {
		return iamErr(409, "DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.")
	}
	delete(w.iam.profiles, profile)
	return nil
}

// TagInstanceProfile adds or overwrites tags on a profile.
func (w *World) TagInstanceProfile(profile string, tags map[string]string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, err := w.profileLocked(profile)
	if err != nil {
		return err
	}
	if p.Tags == nil {
		p.Tags = map[string]string{}
	}
	for k, v := range tags {
		p.Tags[k] = v
	}
	if len(p.Tags) > 50 {
		return iamErr(409, "LimitExceeded", "Cannot exceed quota for TagsPerInstanceProfile: 50")
	}
	return nil
}

func (w *World) profileLocked(name string) (*InstanceProfile, error) {
	w.iam.init()
	p, ok := w.iam.profiles[name]
	if !ok {
		return nil, iamErr(404, "NoSuchEntity", "Instance Profile %s cannot be found.", name)
	}
	return p, nil
}

// instanceProfileKnownLocked reports whether EC2 could launch with the named
// profile: always when the IAM model is not enforced.
func (w *World) instanceProfileKnownLocked(name string) bool {
	if !w.opts.EnforceInstanceProfiles || name == "" {
		return true
	}
	_, ok := w.iam.profiles[name]
	return ok
}

func (w *World) roleLocked(name string) (Role, bool) {
	r, ok := w.iam.roles[name]
	if !ok {
		return Role{}, false
	}
	return *r, true
}

func (w *World) iamArn(kind, path, name string) string {
	return "arn:aws:iam::" + w.opts.AccountID + ":" + kind + path + name
}

// iamID is an IAM unique id: a prefix and 17 upper-case letters and digits.
// It is derived from the name, not the world's random source, so adding
// IAM entities never shifts the ids of instances and templates.
// A profile deleted and created again gets a new id, as in IAM, because the
// creation time is part of the hash.
func iamID(prefix, name string, at time.Time) string {
	sum := sha256.Sum256([]byte(prefix + "/" + name + "/" + at.Format(time.RFC3339Nano)))
	return prefix + base32.StdEncoding.EncodeToString(sum[:])[:17]
}

func cloneProfile(p *InstanceProfile) InstanceProfile {
	c := *p
	c.Roles = append([]string(nil), p.Roles...)
	c.Tags = cloneTags(p.Tags)
	return c
}

func iamErr(status int, code, format string, args ...any) *APIError {
	return apiErr(status, code, format, args...)
}
