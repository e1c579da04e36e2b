package apiserver

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Change is one committed write: Old is nil for a create, New is nil when
// the object is gone. Both are the store's own objects: read, never modify.
type Change struct {
	Old, New client.Object
}

// Object is the object of the change: New, or Old when the object is gone.
func (c Change) Object() client.Object {
	if c.New != nil {
		return c.New
	}
	return c.Old
}

// EvictionFunc decides an eviction: nil allows it, an error (typically
// apierrors.NewTooManyRequests) refuses it.
type EvictionFunc func(pod *corev1.Pod) error

// Server is the store. Build it with New.
type Server struct {
	scheme *runtime.Scheme
	clk    clock.Clock

	mu        sync.Mutex
	rv        uint64
	uid       uint64
	names     *rand.Rand
	kinds     map[schema.GroupVersionKind]*kind
	gvks      map[reflect.Type]schema.GroupVersionKind
	listeners []func(Change)
	pending   []Change
	draining  bool
	evict     EvictionFunc
}

type kind struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	// status: the kind has a status subresource (a Status field).
	status bool
	objs   map[types.NamespacedName]client.Object
	sorted []types.NamespacedName // nil when stale
	// indexers and index: field → extractor, and field → value → keys.
	indexers map[string]client.IndexerFunc
	index    map[string]map[string]map[types.NamespacedName]struct{}
}

// clusterScoped are the kinds without a namespace that the simulator stores.
var clusterScoped = map[string]bool{
	"Node": true, "Namespace": true, "PersistentVolume": true, "StorageClass": true, "PriorityClass": true,
	"NodePool": true, "NodeClaim": true, "EC2NodeClass": true, "NodeOverlay": true, "Commitment": true,
}

// New returns an empty store for the scheme's types; seed makes
// generateName suffixes repeatable.
func New(scheme *runtime.Scheme, clk clock.Clock, seed int64) *Server {
	return &Server{
		scheme: scheme, clk: clk, names: rand.New(rand.NewSource(seed)),
		kinds: map[schema.GroupVersionKind]*kind{}, gvks: map[reflect.Type]schema.GroupVersionKind{},
	}
}

// Watch adds a listener for every committed write, called in commit order.
func (s *Server) Watch(fn func(Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, fn)
}

// SetEviction sets the check the eviction subresource runs (nil: always allowed).
func (s *Server) SetEviction(fn EvictionFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evict = fn
}

// Client returns a client over the store.
func (s *Server) Client() client.Client { return &storeClient{s: s} }

// gvkOf returns the kind of obj (a typed object of the scheme). s.mu held.
func (s *Server) gvkOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	t := reflect.TypeOf(obj)
	if gvk, ok := s.gvks[t]; ok {
		return gvk, nil
	}
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	s.gvks[t] = gvk
	return gvk, nil
}

// kindOf returns the store of obj's kind, creating it. s.mu held.
func (s *Server) kindOf(obj runtime.Object) (*kind, error) {
	gvk, err := s.gvkOf(obj)
	if err != nil {
		return nil, err
	}
	return s.kindFor(gvk, obj), nil
}

func (s *Server) kindFor(gvk schema.GroupVersionKind, sample runtime.Object) *kind {
	if k, ok := s.kinds[gvk]; ok {
		return k
	}
	k := &kind{
		gvk: gvk, namespaced: !clusterScoped[gvk.Kind], objs: map[types.NamespacedName]client.Object{},
		indexers: map[string]client.IndexerFunc{}, index: map[string]map[string]map[types.NamespacedName]struct{}{},
	}
	if sample != nil {
		k.status = reflect.ValueOf(sample).Elem().FieldByName("Status").IsValid()
	}
	s.kinds[gvk] = k
	return k
}

func (k *kind) gr() schema.GroupResource {
	return schema.GroupResource{Group: k.gvk.Group, Resource: k.gvk.Kind}
}

func keyOf(o client.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}

// keys returns the kind's keys sorted by namespace, then name.
func (k *kind) keys() []types.NamespacedName {
	if k.sorted == nil {
		k.sorted = make([]types.NamespacedName, 0, len(k.objs))
		for key := range k.objs {
			k.sorted = append(k.sorted, key)
		}
		sortKeys(k.sorted)
	}
	return k.sorted
}

func sortKeys(keys []types.NamespacedName) {
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

// commit stores next (nil removes the object) in place of old and queues
// the change. s.mu held.
func (s *Server) commit(k *kind, old, next client.Object) {
	var key types.NamespacedName
	if next != nil {
		key = keyOf(next)
	} else {
		key = keyOf(old)
	}
	if old != nil {
		k.unindex(key, old)
	}
	if next == nil {
		delete(k.objs, key)
		k.sorted = nil
	} else {
		if old == nil {
			k.sorted = nil
		}
		k.objs[key] = next
		k.reindex(key, next)
	}
	s.pending = append(s.pending, Change{Old: old, New: next})
}

// flush delivers queued changes to the listeners, in order, outside s.mu.
// A write made while delivering is delivered by the same loop.
func (s *Server) flush() {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		return
	}
	s.draining = true
	for len(s.pending) > 0 {
		batch := s.pending
		s.pending = nil
		listeners := s.listeners
		s.mu.Unlock()
		for _, c := range batch {
			for _, fn := range listeners {
				fn(c)
			}
		}
		s.mu.Lock()
	}
	s.draining = false
	s.mu.Unlock()
}

func (s *Server) nextRV() string {
	s.rv++
	return strconv.FormatUint(s.rv, 10)
}

func (s *Server) nextUID() types.UID {
	s.uid++
	return types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", s.uid))
}

// now is the server's timestamp: seconds, as the API serialises them.
func (s *Server) now() metav1.Time { return metav1.NewTime(s.clk.Now().Truncate(time.Second)) }

const nameChars = "bcdfghjklmnpqrstvwxz2456789"

func (s *Server) generateName(prefix string) string {
	b := make([]byte, 5)
	for i := range b {
		b[i] = nameChars[s.names.Intn(len(nameChars))]
	}
	return prefix + string(b)
}

// statusOf is the Status field of a typed object (invalid if it has none).
func statusOf(o runtime.Object) reflect.Value {
	return reflect.ValueOf(o).Elem().FieldByName("Status")
}

// statusCopy is a deep copy of o's Status field (through the status
// type's generated DeepCopy), without copying the rest of the object.
func statusCopy(o runtime.Object) reflect.Value {
	st := statusOf(o)
	if m := st.Addr().MethodByName("DeepCopy"); m.IsValid() {
		return m.Call(nil)[0].Elem()
	}
	return statusOf(o.DeepCopyObject())
}

// specChanged reports whether anything but metadata and status differs:
// what bumps metadata.generation.
func specChanged(a, b runtime.Object) bool {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	t := va.Type()
	for i := 0; i < t.NumField(); i++ {
		switch t.Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
			continue
		}
		if !equality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return true
		}
	}
	return false
}

// copyInto makes dst (a pointer to a typed object) a deep copy of src.
func copyInto(dst, src runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
}

func notFound(k *kind, name string) error { return apierrors.NewNotFound(k.gr(), name) }

func conflict(k *kind, name string, why string) error {
	return apierrors.NewConflict(k.gr(), name, fmt.Errorf("%s", why))
}
