// Package statuspatch is the one way the controllers write the status of
// NodeClaims, NodePools and EC2NodeClasses.
//
// Several controllers write conditions on the same object (the lifecycle
// controller Launched, Registered, Initialized and Ready on a NodeClaim,
// the interruption handler Disrupting). A JSON merge patch replaces the
// whole status.conditions list, so a writer holding an older copy would
// erase the condition another wrote meanwhile. Patch therefore sends the
// status with an optimistic lock (the resourceVersion of the copy the
// patch was computed from) and, when the object moved on, reads it again
// and applies to that copy only what this writer changed: its conditions
// merged by type (lifecycle.MergeConditions) and the other status fields it
// changed. What anyone else wrote survives.
package statuspatch

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// backoff paces the attempts after a conflict. It is long enough for a
// cache-backed reader to catch up with the write that caused the conflict
// (about 2.5 s in all); a writer that still conflicts returns the conflict
// and its reconcile is retried.
var backoff = wait.Backoff{Steps: 9, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.1}

// Option adjusts one Patch.
type Option func(*options)

type options struct {
	fresh client.Reader
	cur   client.Object
}

// ReadFrom re-reads the object through r after a conflict (e.g. the
// manager's uncached APIReader) instead of through the writing client.
func ReadFrom(r client.Reader) Option {
	return func(o *options) {
		if r != nil {
			o.fresh = r
		}
	}
}

// Onto says the API server's copy is known to be cur, newer than base
// (the writer's own metadata patch returned it): the first attempt is
// locked on cur's resourceVersion and carries the changes onto it.
func Onto(cur client.Object) Option { return func(o *options) { o.cur = cur } }

// Patch writes the status changes obj carries over base (both of the same
// type, a struct with a Status field holding Conditions []metav1.Condition):
// the condition types added, changed or removed, and the other status
// fields changed. The patch is locked on the resourceVersion of the copy it
// was computed from (base, or Onto's); on a conflict the object is read
// again and the same changes are applied to that copy. obj is left holding
// the object as written; when there is nothing to write it is untouched.
// A NotFound is returned as is.
func Patch(ctx context.Context, kube client.Client, base, obj client.Object, opts ...Option) error {
	o := options{fresh: kube, cur: base}
	for _, opt := range opts {
		opt(&o)
	}
	ch, err := diff(base, obj)
	if err != nil {
		return err
	}
	if ch.empty() {
		return nil
	}
	cur := o.cur // only read: each attempt writes a copy
	return retry.RetryOnConflict(backoff, func() error {
		next, err := ch.onto(cur)
		if err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(statusOf(next).Interface(), statusOf(cur).Interface()) {
			setObject(obj, cur.DeepCopyObject().(client.Object)) // the object already says what this writer wants
			return nil
		}
		body, err := lockedStatusPatch(cur, next)
		if err != nil {
			return err
		}
		err = kube.Status().Patch(ctx, next, client.RawPatch(types.MergePatchType, body))
		if err == nil {
			setObject(obj, next) // next is this call's own copy, now the object as written
			return nil
		}
		if apierrors.IsConflict(err) {
			// Read into an empty object: decoding into a used one would
			// keep map keys the server no longer has.
			again := reflect.New(reflect.TypeOf(cur).Elem()).Interface().(client.Object)
			if gerr := o.fresh.Get(ctx, client.ObjectKeyFromObject(cur), again); gerr != nil {
				return gerr
			}
			cur = again
		}
		return err
	})
}

// lockedStatusPatch is the JSON merge patch that turns cur's status into
// next's, locked on cur's resourceVersion. Only the statuses are encoded:
// the status subresource ignores the rest of the object, so diffing two
// whole objects (as client.MergeFrom does) would encode the spec and
// metadata twice for nothing.
func lockedStatusPatch(cur, next client.Object) ([]byte, error) {
	cs, err := json.Marshal(statusOf(cur).Interface())
	if err != nil {
		return nil, fmt.Errorf("statuspatch: encoding the status of %T %s: %w", cur, cur.GetName(), err)
	}
	ns, err := json.Marshal(statusOf(next).Interface())
	if err != nil {
		return nil, fmt.Errorf("statuspatch: encoding the status of %T %s: %w", next, next.GetName(), err)
	}
	sp, err := jsonpatch.CreateMergePatch(cs, ns)
	if err != nil {
		return nil, fmt.Errorf("statuspatch: diffing the status of %T %s: %w", cur, cur.GetName(), err)
	}
	type lock struct {
		ResourceVersion string `json:"resourceVersion"`
	}
	return json.Marshal(struct {
		Metadata lock            `json:"metadata"`
		Status   json.RawMessage `json:"status"`
	}{lock{cur.GetResourceVersion()}, sp})
}

// change is one writer's status change: its status before and after.
type change struct {
	baseStatus           reflect.Value
	wantStatus           reflect.Value
	baseConds, wantConds []metav1.Condition
	same                 bool
}

func diff(base, obj client.Object) (change, error) {
	bs, ws := statusOf(base), statusOf(obj)
	if !bs.IsValid() || !ws.IsValid() || bs.Type() != ws.Type() {
		return change{}, fmt.Errorf("statuspatch: %T and %T have no common Status field", base, obj)
	}
	bc, ok1 := conditionsOf(bs)
	wc, ok2 := conditionsOf(ws)
	if !ok1 || !ok2 {
		return change{}, fmt.Errorf("statuspatch: the status of %T has no Conditions []metav1.Condition", obj)
	}
	return change{baseStatus: bs, wantStatus: ws, baseConds: bc, wantConds: wc,
		same: equality.Semantic.DeepEqual(bs.Interface(), ws.Interface())}, nil
}

func (c change) empty() bool { return c.same }

// rest is the JSON merge patch of the status fields other than the
// conditions, from the writer's base to what it wants.
func (c change) rest() ([]byte, error) {
	br, err := restJSON(c.baseStatus)
	if err != nil {
		return nil, err
	}
	wr, err := restJSON(c.wantStatus)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.CreateMergePatch(br, wr)
	if err != nil {
		return nil, fmt.Errorf("statuspatch: diffing a %s: %w", c.wantStatus.Type(), err)
	}
	return p, nil
}

// onto is cur with this change applied to its status. While cur's status
// is the one the writer read, that is simply the writer's status; when
// someone else changed it, the writer's conditions are merged by type and
// its other changed fields patched onto cur's.
func (c change) onto(cur client.Object) (client.Object, error) {
	next := cur.DeepCopyObject().(client.Object)
	ns := statusOf(next)
	if equality.Semantic.DeepEqual(statusOf(cur).Interface(), c.baseStatus.Interface()) {
		ns.Set(deepCopyValue(c.wantStatus))
		return next, nil
	}
	rest, err := c.rest()
	if err != nil {
		return nil, err
	}
	cr, err := restJSON(statusOf(cur))
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(cr, rest)
	if err != nil {
		return nil, fmt.Errorf("statuspatch: applying a status change to %T %s: %w", cur, cur.GetName(), err)
	}
	fresh := reflect.New(ns.Type())
	if err := json.Unmarshal(merged, fresh.Interface()); err != nil {
		return nil, fmt.Errorf("statuspatch: decoding the status of %T %s: %w", cur, cur.GetName(), err)
	}
	curConds, _ := conditionsOf(statusOf(cur))
	conds := lifecycle.MergeConditions(c.baseConds, c.wantConds, curConds)
	fresh.Elem().FieldByName("Conditions").Set(reflect.ValueOf(conds))
	ns.Set(fresh.Elem())
	return next, nil
}

// statusOf is the Status field of a pointer to a struct (invalid if none).
func statusOf(o client.Object) reflect.Value {
	v := reflect.ValueOf(o)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	s := v.Elem().FieldByName("Status")
	if s.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return s
}

func conditionsOf(status reflect.Value) ([]metav1.Condition, bool) {
	f := status.FieldByName("Conditions")
	if !f.IsValid() {
		return nil, false
	}
	c, ok := f.Interface().([]metav1.Condition)
	return c, ok
}

// restJSON is the status as JSON without its conditions.
func restJSON(status reflect.Value) ([]byte, error) {
	cp := deepCopyValue(status)
	cp.FieldByName("Conditions").Set(reflect.Zero(cp.FieldByName("Conditions").Type()))
	b, err := json.Marshal(cp.Interface())
	if err != nil {
		return nil, fmt.Errorf("statuspatch: encoding a %s: %w", status.Type(), err)
	}
	return b, nil
}

// deepCopyValue copies a status struct through its generated DeepCopy.
func deepCopyValue(v reflect.Value) reflect.Value {
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	if m := p.MethodByName("DeepCopy"); m.IsValid() {
		return m.Call(nil)[0].Elem()
	}
	return p.Elem()
}

// setObject makes dst hold src (same type), which the caller no longer uses.
func setObject(dst, src client.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}
