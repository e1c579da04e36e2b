package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// storeClient is the client.Client over a Server.
type storeClient struct{ s *Server }

var _ client.Client = (*storeClient)(nil)

func (c *storeClient) Scheme() *runtime.Scheme     { return c.s.scheme }
func (c *storeClient) RESTMapper() meta.RESTMapper { return nil }

func (c *storeClient) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.s.gvkOf(obj)
}

func (c *storeClient) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return false, err
	}
	return !clusterScoped[gvk.Kind], nil
}

// Get copies the stored object into obj.
// With client.UnsafeDisableDeepCopy obj shares the store's maps and
// slices, as the cache's do: the caller must not modify them.
func (c *storeClient) Get(_ context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	o := (&client.GetOptions{}).ApplyOptions(opts)
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	k, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	if !k.namespaced {
		key.Namespace = ""
	}
	cur, ok := k.objs[key]
	if !ok {
		return notFound(k, key.Name)
	}
	if o.UnsafeDisableDeepCopy != nil && *o.UnsafeDisableDeepCopy {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(cur).Elem())
		return nil
	}
	copyInto(obj, cur)
	return nil
}

// List fills list with the matching objects, sorted by namespace and name.
// With client.UnsafeDisableDeepCopy the items share the store's maps and
// slices, as the cache's do: the caller must not modify them.
func (c *storeClient) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	s := c.s
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	s.mu.Lock()
	defer s.mu.Unlock()
	lgvk, err := s.gvkOf(list)
	if err != nil {
		return err
	}
	gvk := lgvk.GroupVersion().WithKind(strings.TrimSuffix(lgvk.Kind, "List"))
	k := s.kinds[gvk]
	if k == nil {
		sample, err := s.scheme.New(gvk)
		if err != nil {
			return fmt.Errorf("listing %s: %w", gvk, err)
		}
		k = s.kindFor(gvk, sample)
	}
	keys, err := k.candidates(lo)
	if err != nil {
		return err
	}
	unsafe := lo.UnsafeDisableDeepCopy != nil && *lo.UnsafeDisableDeepCopy
	items := make([]runtime.Object, 0, len(keys))
	for _, key := range keys {
		o := k.objs[key]
		if lo.Namespace != "" && k.namespaced && o.GetNamespace() != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labelSet(o.GetLabels())) {
			continue
		}
		if unsafe {
			items = append(items, o)
		} else {
			items = append(items, o.DeepCopyObject())
		}
	}
	if err := setList(list, items); err != nil {
		return fmt.Errorf("listing %s: %w", gvk, err)
	}
	list.SetResourceVersion(fmt.Sprint(s.rv))
	return nil
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool              { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string            { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) { v, ok := l[k]; return v, ok }

// candidates are the keys a list may return: all, or those a field
// selector picks through an index (metadata.name and metadata.namespace
// need none). Like the cache, other field selectors are refused.
func (k *kind) candidates(lo *client.ListOptions) ([]types.NamespacedName, error) {
	if lo.FieldSelector == nil || lo.FieldSelector.Empty() {
		return k.keys(), nil
	}
	var out []types.NamespacedName
	for i, r := range lo.FieldSelector.Requirements() {
		if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
			return nil, fmt.Errorf("field selector %s: only equality is supported", lo.FieldSelector)
		}
		var keys []types.NamespacedName
		switch r.Field {
		case "metadata.name", "metadata.namespace":
			for _, key := range k.keys() {
				if (r.Field == "metadata.name" && key.Name == r.Value) || (r.Field == "metadata.namespace" && key.Namespace == r.Value) {
					keys = append(keys, key)
				}
			}
		default:
			if _, ok := k.indexers[r.Field]; !ok {
				return nil, fmt.Errorf("field selector %s on %s: no index for %q", lo.FieldSelector, k.gvk.Kind, r.Field)
			}
			for key := range k.index[r.Field][r.Value] {
				keys = append(keys, key)
			}
			sortKeys(keys)
		}
		if i == 0 {
			out = keys
			continue
		}
		out = intersect(out, keys)
	}
	return out, nil
}

func intersect(a, b []types.NamespacedName) []types.NamespacedName {
	in := map[types.NamespacedName]bool{}
	for _, k := range b {
		in[k] = true
	}
	var out []types.NamespacedName
	for _, k := range a {
		if in[k] {
			out = append(out, k)
		}
	}
	return out
}

var _ = fields.Everything // field selectors arrive as fields.Selector

// Create stores obj: name from generateName if unset, UID, resourceVersion,
// generation 1 and the creation time; a kind with a status subresource
// (other than pods and nodes, whose creators set status) starts with none.
func (c *storeClient) Create(_ context.Context, obj client.Object, opts ...client.CreateOption) error {
	s := c.s
	co := (&client.CreateOptions{}).ApplyOptions(opts)
	s.mu.Lock()
	err := c.create(obj, len(co.DryRun) > 0)
	s.mu.Unlock()
	s.flush()
	return err
}

func (c *storeClient) create(obj client.Object, dryRun bool) error {
	s := c.s
	k, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	if !k.namespaced {
		obj.SetNamespace("")
	} else if obj.GetNamespace() == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s %s: a namespace is required", k.gvk.Kind, obj.GetName()))
	}
	name := obj.GetName()
	if name == "" {
		if obj.GetGenerateName() == "" {
			return apierrors.NewBadRequest(fmt.Sprintf("%s: name or generateName is required", k.gvk.Kind))
		}
		for {
			name = s.generateName(obj.GetGenerateName())
			if _, taken := k.objs[types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}]; !taken {
				break
			}
		}
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}
	if _, ok := k.objs[key]; ok {
		return apierrors.NewAlreadyExists(k.gr(), name)
	}
	next := obj.DeepCopyObject().(client.Object)
	next.SetName(name)
	next.SetUID(s.nextUID())
	next.SetGeneration(1)
	next.SetCreationTimestamp(s.now())
	next.SetDeletionTimestamp(nil)
	next.SetDeletionGracePeriodSeconds(nil)
	if k.status && k.gvk.Kind != "Pod" && k.gvk.Kind != "Node" {
		st := statusOf(next)
		st.Set(reflect.Zero(st.Type()))
	}
	if dryRun {
		copyInto(obj, next)
		return nil
	}
	next.SetResourceVersion(s.nextRV())
	s.commit(k, nil, next)
	copyInto(obj, next)
	return nil
}

// Update replaces obj (not its status, for kinds with a status subresource).
func (c *storeClient) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	s := c.s
	s.mu.Lock()
	err := c.update(obj, false)
	s.mu.Unlock()
	s.flush()
	return err
}

// update writes obj over the stored object: the status only (status true)
// or everything but the status. s.mu held.
func (c *storeClient) update(obj client.Object, status bool) error {
	s := c.s
	k, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	if !k.namespaced {
		obj.SetNamespace("")
	}
	key := keyOf(obj)
	cur, ok := k.objs[key]
	if !ok {
		return notFound(k, key.Name)
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
		return conflict(k, key.Name, "the object has been modified; please apply your changes to the latest version and try again")
	}
	return c.write(k, cur, obj.DeepCopyObject().(client.Object), status, obj)
}

// write stores in place of cur what the request asks, given as next (the
// store's own object, never the caller's): next's status only (status
// true), or everything but the status and the fields the server owns. A
// request that changes nothing commits nothing, as the API server does.
// obj receives a copy of the stored object. s.mu held.
func (c *storeClient) write(k *kind, cur, next client.Object, status bool, obj client.Object) error {
	s := c.s
	if status {
		if !k.status {
			return apierrors.NewNotFound(schema.GroupResource{Group: k.gvk.Group, Resource: k.gvk.Kind + "/status"}, cur.GetName())
		}
		withStatus := cur.DeepCopyObject().(client.Object)
		statusOf(withStatus).Set(statusOf(next))
		next = withStatus
	} else {
		next.SetUID(cur.GetUID())
		next.SetCreationTimestamp(cur.GetCreationTimestamp())
		next.SetDeletionTimestamp(cur.GetDeletionTimestamp())
		next.SetDeletionGracePeriodSeconds(cur.GetDeletionGracePeriodSeconds())
		next.SetGeneration(cur.GetGeneration())
		if k.status {
			statusOf(next).Set(statusCopy(cur))
		}
		if specChanged(cur, next) {
			next.SetGeneration(cur.GetGeneration() + 1)
		}
	}
	next.SetResourceVersion(cur.GetResourceVersion())
	if reflect.DeepEqual(cur, next) {
		copyInto(obj, cur) // a no-op write commits nothing, as the API server does
		return nil
	}
	next.SetResourceVersion(s.nextRV())
	if next.GetDeletionTimestamp() != nil && len(next.GetFinalizers()) == 0 && !awaitingKubelet(next) {
		s.commit(k, cur, nil)
		copyInto(obj, next)
		return nil
	}
	s.commit(k, cur, next)
	copyInto(obj, next)
	return nil
}

// awaitingKubelet: a bound pod being deleted gracefully stays until its
// kubelet confirms the containers stopped (a delete with grace 0).
func awaitingKubelet(o client.Object) bool {
	p, ok := o.(*corev1.Pod)
	return ok && p.Spec.NodeName != "" && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds > 0
}

// Patch applies a JSON merge, strategic merge or JSON patch to the stored
// object. A patch that carries a resourceVersion (client.MergeFromWithOptimisticLock)
// fails with a conflict when it is not the stored one.
func (c *storeClient) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	s := c.s
	s.mu.Lock()
	err := c.patch(obj, patch, false)
	s.mu.Unlock()
	s.flush()
	return err
}

func (c *storeClient) patch(obj client.Object, patch client.Patch, status bool) error {
	s := c.s
	data, err := patch.Data(obj)
	if err != nil {
		return fmt.Errorf("computing the patch: %w", err)
	}
	k, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	if !k.namespaced {
		obj.SetNamespace("")
	}
	key := keyOf(obj)
	cur, ok := k.objs[key]
	if !ok {
		return notFound(k, key.Name)
	}
	var next client.Object
	switch patch.Type() {
	case types.MergePatchType:
		next, err = mergePatch(cur, data)
	case types.StrategicMergePatchType:
		next, err = wholePatch(cur, func(doc []byte) ([]byte, error) { return strategicpatch.StrategicMergePatch(doc, data, cur) })
	case types.JSONPatchType:
		next, err = wholePatch(cur, func(doc []byte) ([]byte, error) {
			p, err := jsonpatch.DecodePatch(data)
			if err != nil {
				return nil, err
			}
			return p.Apply(doc)
		})
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("patch type %s is not supported by the simulated API server", patch.Type()))
	}
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("applying the patch to %s %s: %v", k.gvk.Kind, key.Name, err))
	}
	if next.GetResourceVersion() != cur.GetResourceVersion() {
		return conflict(k, key.Name, "the object has been modified; please apply your changes to the latest version and try again")
	}
	return c.write(k, cur, next, status, obj)
}

// wholePatch is cur encoded as JSON, patched by apply and decoded into a
// new object, as the API server patches.
func wholePatch(cur client.Object, apply func(doc []byte) ([]byte, error)) (client.Object, error) {
	doc, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	merged, err := apply(doc)
	if err != nil {
		return nil, err
	}
	next := reflect.New(reflect.TypeOf(cur).Elem()).Interface().(client.Object)
	if err := json.Unmarshal(merged, next); err != nil {
		return nil, fmt.Errorf("decoding the patched object: %w", err)
	}
	return next, nil
}

// mergePatch applies a JSON merge patch (RFC 7386) to cur, into a new
// object. What a merge patch does not name it leaves as it is, so the patch
// is applied field by field (mergeStruct) instead of encoding the whole
// object, patching its JSON and decoding it all again: the result is the
// whole-object patch's (TestMergePatchByFieldIsTheWholeObjectPatch). A
// patch of another shape (not an object, or naming what is not a field by
// its JSON name, such as the inline apiVersion) is applied to the whole
// object.
func mergePatch(cur client.Object, data []byte) (client.Object, error) {
	next := cur.DeepCopyObject().(client.Object)
	ok, err := mergeStruct(reflect.ValueOf(next).Elem(), data)
	if err != nil {
		return nil, err
	}
	if !ok {
		return wholePatch(cur, func(doc []byte) ([]byte, error) { return jsonpatch.MergePatch(doc, data) })
	}
	return next, nil
}

// mergeStruct applies the merge patch data to the struct v in place: a
// field the patch names with anything but an object is replaced by that
// value decoded (null: the zero value); one it names with an object is
// merged into, a plain struct field by this same walk, any other (map,
// pointer, a type with its own JSON encoding) through its JSON. It returns
// false, v untouched, when data is not an object or names a key that is
// not one of v's fields by its exact JSON name (inline and case-folded
// names): the caller merges v through its JSON.
func mergeStruct(v reflect.Value, data []byte) (bool, error) {
	var patch map[string]json.RawMessage
	if err := json.Unmarshal(data, &patch); err != nil || patch == nil {
		return false, nil
	}
	fields := jsonFields(v.Type())
	for name := range patch {
		if _, ok := fields[name]; !ok {
			return false, nil
		}
	}
	for name, raw := range patch {
		f := v.Field(fields[name])
		if !isObject(raw) { // anything else replaces the field (RFC 7386)
			if err := decodeInto(f, raw); err != nil {
				return false, fmt.Errorf("%s: %w", name, err)
			}
			continue
		}
		if plainStruct(f.Type()) {
			ok, err := mergeStruct(f, raw)
			if err != nil {
				return false, fmt.Errorf("%s.%w", name, err)
			}
			if ok {
				continue
			}
		}
		if err := mergeJSON(f, raw); err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
	}
	return true, nil
}

// mergeJSON merges the object patch raw into f through f's JSON.
func mergeJSON(f reflect.Value, raw json.RawMessage) error {
	doc, err := json.Marshal(f.Interface())
	if err != nil {
		return err
	}
	if string(doc) == "null" {
		doc = []byte("{}") // an absent target: the patch is merged onto nothing
	}
	merged, err := jsonpatch.MergePatch(doc, raw)
	if err != nil {
		return err
	}
	return decodeInto(f, merged)
}

// decodeInto sets f to raw decoded into a zero value of its type.
func decodeInto(f reflect.Value, raw []byte) error {
	fresh := reflect.New(f.Type())
	if err := json.Unmarshal(raw, fresh.Interface()); err != nil {
		return err
	}
	f.Set(fresh.Elem())
	return nil
}

var (
	marshaler   = reflect.TypeFor[json.Marshaler]()
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// plainStruct: a struct encoded field by field (no JSON methods of its own,
// as metav1.Time and resource.Quantity have).
func plainStruct(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !t.Implements(marshaler) && !reflect.PointerTo(t).Implements(marshaler) &&
		!t.Implements(unmarshaler) && !reflect.PointerTo(t).Implements(unmarshaler)
}

// jsonFieldsOf caches jsonFields by type.
var jsonFieldsOf sync.Map

// jsonFields maps the JSON names of t's fields to their index: exported
// fields with a name in their json tag (an embedded struct with one, such
// as ObjectMeta, is a field like any other), not inline ones, nor those
// encoded as strings.
func jsonFields(t reflect.Type) map[string]int {
	if m, ok := jsonFieldsOf.Load(t); ok {
		return m.(map[string]int)
	}
	out := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() || strings.Contains(","+opts+",", ",string,") {
			continue
		}
		out[name] = i
	}
	jsonFieldsOf.Store(t, out)
	return out
}

func isObject(raw json.RawMessage) bool {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return b == '{'
	}
	return false
}

// Delete deletes obj: at once, or by setting its deletion timestamp while
// finalizers remain or, for a bound pod, until its kubelet confirms.
func (c *storeClient) Delete(_ context.Context, obj client.Object, opts ...client.DeleteOption) error {
	s := c.s
	do := (&client.DeleteOptions{}).ApplyOptions(opts)
	s.mu.Lock()
	err := c.delete(obj, do)
	s.mu.Unlock()
	s.flush()
	return err
}

func (c *storeClient) delete(obj client.Object, do *client.DeleteOptions) error {
	s := c.s
	k, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	if !k.namespaced {
		obj.SetNamespace("")
	}
	key := keyOf(obj)
	cur, ok := k.objs[key]
	if !ok {
		return notFound(k, key.Name)
	}
	if pre := do.Preconditions; pre != nil {
		if pre.UID != nil && *pre.UID != cur.GetUID() {
			return conflict(k, key.Name, "the UID precondition failed")
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != cur.GetResourceVersion() {
			return conflict(k, key.Name, "the resourceVersion precondition failed")
		}
	}
	pod, isPod := cur.(*corev1.Pod)
	var grace *int64
	if isPod && pod.Spec.NodeName != "" {
		g := int64(corev1.DefaultTerminationGracePeriodSeconds)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			g = *pod.Spec.TerminationGracePeriodSeconds
		}
		if do.GracePeriodSeconds != nil {
			g = *do.GracePeriodSeconds
		}
		if cur.GetDeletionGracePeriodSeconds() != nil && *cur.GetDeletionGracePeriodSeconds() < g {
			g = *cur.GetDeletionGracePeriodSeconds() // a deletion may shorten the grace, never lengthen it
		}
		grace = &g
	}
	finalizers := len(cur.GetFinalizers()) > 0
	waitKubelet := grace != nil && *grace > 0
	if !finalizers && !waitKubelet {
		s.commit(k, cur, nil)
		return nil
	}
	if cur.GetDeletionTimestamp() != nil && (grace == nil || equalGrace(cur.GetDeletionGracePeriodSeconds(), grace)) {
		return nil // already being deleted
	}
	next := cur.DeepCopyObject().(client.Object)
	switch {
	case grace != nil:
		// A graceful pod deletion's timestamp is when the grace period
		// ends, as the API server sets it; a shorter grace moves it earlier.
		ts := metav1.NewTime(s.now().Add(time.Duration(*grace) * time.Second))
		if cur := next.GetDeletionTimestamp(); cur == nil || ts.Before(cur) {
			next.SetDeletionTimestamp(&ts)
		}
	case next.GetDeletionTimestamp() == nil:
		ts := s.now()
		next.SetDeletionTimestamp(&ts)
	}
	if grace != nil {
		next.SetDeletionGracePeriodSeconds(grace)
	} else if next.GetDeletionGracePeriodSeconds() == nil {
		zeroGrace := int64(0)
		next.SetDeletionGracePeriodSeconds(&zeroGrace)
	}
	if !finalizers && grace != nil && *grace == 0 {
		s.commit(k, cur, nil)
		return nil
	}
	next.SetResourceVersion(s.nextRV())
	s.commit(k, cur, next)
	return nil
}

func equalGrace(a, b *int64) bool { return a != nil && b != nil && *a == *b }

// DeleteAllOf deletes every object the options select.
func (c *storeClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	dao := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	list, err := c.s.scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return err
	}
	if err := c.List(ctx, list.(client.ObjectList), &dao.ListOptions); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := c.Delete(ctx, it.(client.Object), &dao.DeleteOptions); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// Apply (server-side apply) is not used by Nodesmith.
func (c *storeClient) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return errors.New("server-side apply is not supported by the simulated API server")
}

// Status writes the status subresource.
func (c *storeClient) Status() client.SubResourceWriter { return &subResource{c: c, name: "status"} }

// SubResource supports status, eviction (pods) and binding (pods).
func (c *storeClient) SubResource(name string) client.SubResourceClient {
	return &subResource{c: c, name: name}
}

type subResource struct {
	c    *storeClient
	name string
}

func (r *subResource) Get(_ context.Context, obj, sub client.Object, _ ...client.SubResourceGetOption) error {
	return fmt.Errorf("getting the %s subresource is not supported by the simulated API server", r.name)
}

func (r *subResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	switch r.name {
	case "eviction":
		return r.c.s.evictPod(ctx, r.c, obj, sub)
	case "binding":
		return r.c.s.bindPod(obj, sub)
	}
	return fmt.Errorf("creating the %s subresource is not supported by the simulated API server", r.name)
}

func (r *subResource) Update(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	if r.name != "status" {
		return fmt.Errorf("updating the %s subresource is not supported by the simulated API server", r.name)
	}
	s := r.c.s
	s.mu.Lock()
	err := r.c.update(obj, true)
	s.mu.Unlock()
	s.flush()
	return err
}

func (r *subResource) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
	if r.name != "status" {
		return fmt.Errorf("patching the %s subresource is not supported by the simulated API server", r.name)
	}
	s := r.c.s
	s.mu.Lock()
	err := r.c.patch(obj, patch, true)
	s.mu.Unlock()
	s.flush()
	return err
}

func (r *subResource) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return errors.New("server-side apply is not supported by the simulated API server")
}

// setList fills a typed list: a direct copy for the kinds the controllers
// list by the thousand, meta.SetList's reflection for the rest.
func setList(list client.ObjectList, items []runtime.Object) error {
	switch l := list.(type) {
	case *corev1.PodList:
		l.Items = make([]corev1.Pod, len(items))
		for i, o := range items {
			l.Items[i] = *o.(*corev1.Pod)
		}
	case *corev1.NodeList:
		l.Items = make([]corev1.Node, len(items))
		for i, o := range items {
			l.Items[i] = *o.(*corev1.Node)
		}
	default:
		return meta.SetList(list, items)
	}
	return nil
}

// ListShared returns the stored objects of obj's kind, sorted by namespace
// and name, without copying them — as the controller reads its informer
// cache's store (state.SharedLister). Stored objects are replaced, never
// changed in place, so a caller holding them sees a consistent object; it
// must not modify them.
func (s *Server) ListShared(_ context.Context, obj client.Object) ([]client.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gvk, err := s.gvkOf(obj)
	if err != nil {
		return nil, err
	}
	k := s.kinds[gvk]
	if k == nil {
		return nil, nil
	}
	keys := k.keys()
	out := make([]client.Object, len(keys))
	for i, key := range keys {
		out[i] = k.objs[key]
	}
	return out, nil
}
