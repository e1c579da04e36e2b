package disruption

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"reflect"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// A plan is a function of its input and the clock, and the clock matters
// only at the instants the plan compared it with: a node's consolidateAfter
// or expiry, the end of a do-not-disrupt duration, a repack hold, the
// replacement settle window. A quiet cluster asks the same question every
// poll, and over thousands of pods the answer takes hundreds of
// milliseconds; so Compute returns the caller's previous plan when nothing
// it reads has changed and none of those instants has come.
//
// "Nothing it reads" is the fingerprint: the snapshot's Version (every
// object by UID and resourceVersion: any write bumps it), every
// EC2NodeClass by the same, the instance types as the plan sees them
// (prices, availability after the insufficient-capacity view, capacity,
// overhead, labels), the pending pods the provisioner holds on nodes and
// the nominations, the claims the caller acted on lately, and the budgets'
// allowance at this instant (cron windows open and close with the clock). An object without a
// resourceVersion (hand-built in a test) makes the plan not reusable.

// maxReuse bounds how long one plan is reused even when nothing changed,
// as a guard against a time dependency the horizon does not track.
const maxReuse = 5 * time.Minute

// reuse is what a plan needs to be handed back for a later input.
type reuse struct {
	fingerprint uint64
	opts        Options
	// until is the first instant at which a time comparison of the plan
	// may turn out differently (never later than made + maxReuse).
	until time.Time
	// types are the hashes of the instance types' fixed parts (all but
	// their offerings) by typeIdentity: hashing 700 types' labels every
	// poll cost more than the rest of the fingerprint.
	types map[typeIdentity]uint64
	// requests are the pods' requests the plan computed, by UID with
	// their resourceVersion, for the next plan.
	requests map[types.UID]podRequest
}

// typeIdentity names an instance type's fixed parts by the maps that hold
// them. Instance types are shared read-only values, and the copies a cloud
// provider hands out with fresh offerings (catalog.InstanceType.WithOfferings)
// share their maps with the type they copy: the same maps, the same parts.
type typeIdentity struct {
	name                                                  string
	labels, capacity, kubeReserved, sysReserved, eviction uintptr
	onDemand                                              float64
}

func identity(it *catalog.InstanceType) typeIdentity {
	ptr := func(m any) uintptr { return reflect.ValueOf(m).Pointer() }
	return typeIdentity{name: it.Name, labels: ptr(it.Labels), capacity: ptr(it.Capacity), kubeReserved: ptr(it.Overhead.KubeReserved),
		sysReserved: ptr(it.Overhead.SystemReserved), eviction: ptr(it.Overhead.EvictionThreshold), onDemand: it.OnDemandPrice}
}

// reusable reports whether prev answers the input w was built from.
func (w *working) reusable(prev *Plan, fp uint64, ok bool) bool {
	if !ok || prev == nil || prev.reuse == nil {
		return false
	}
	r := prev.reuse
	return r.fingerprint == fp && r.opts == w.opts && w.in.Now.Before(r.until)
}

// due reports whether at has come (the comparison the plan's steps make
// against the clock), and records at as a horizon when it has not.
func (w *working) due(at time.Time) bool {
	if !at.After(w.in.Now) {
		return true
	}
	w.until(at)
	return false
}

// until records that the plan may change at t.
func (w *working) until(t time.Time) {
	if t.After(w.in.Now) && (w.horizon.IsZero() || t.Before(w.horizon)) {
		w.horizon = t
	}
}

// fingerprint hashes everything the plan reads besides the clock; ok is
// false when an object carries no resourceVersion.
func (w *working) fingerprint() (uint64, bool) {
	var known map[typeIdentity]uint64
	if prev := w.in.Previous; prev != nil && prev.reuse != nil {
		known = prev.reuse.types
	}
	// The next plan gets known again when every type was known (no map
	// built every poll), else a map of exactly the types seen now.
	var fresh map[typeIdentity]uint64
	h := newFingerprinter()
	snap := w.in.Snapshot
	version, ok := snap.Version()
	h.u64(version)
	for _, o := range snap.NodeClaims {
		h.bool(w.in.Disrupting != nil && w.in.Disrupting(o.Name))
	}
	h.int(len(w.in.BufferPods))
	for _, p := range w.in.BufferPods {
		h.str(string(p.UID))
	}
	classes := make([]*awsv1.EC2NodeClass, 0, len(w.in.NodeClasses))
	for _, name := range sortedKeys(w.in.NodeClasses) {
		classes = append(classes, w.in.NodeClasses[name])
	}
	classVersion, classesOK := provisioning.ObjectsVersion(classes)
	h.u64(classVersion)
	ok = ok && classesOK
	for _, pool := range sortedKeys(w.typesByPool) {
		h.str(pool)
		seen := w.typesByPool[pool]
		h.int(len(seen))
		for _, it := range seen {
			id := identity(it)
			fixed, ok := known[id]
			if !ok {
				fixed = fixedHash(it)
				if fresh == nil {
					fresh = w.knownTypes(known)
				}
			}
			if fresh != nil {
				fresh[id] = fixed
			}
			h.u64(fixed)
			h.offerings(it.Offerings)
		}
	}
	for _, target := range sortedKeys(w.held) {
		h.str(target)
		for _, p := range w.held[target] {
			h.str(string(p.UID))
		}
	}
	for _, target := range sortedKeys(w.nominatedTargets) {
		h.str(target)
	}
	for _, pool := range sortedKeys(w.budgets.pools) {
		h.str(pool)
		a := w.budgets.pools[pool]
		h.int(a.Ledger().Disrupting)
		for _, r := range nsv1.DisruptionReasons {
			h.int(a.Limit(r))
		}
		if err := w.budgets.errs[pool]; err != nil {
			h.str(err.Error())
		}
	}
	w.typeHashes = known
	if fresh != nil {
		w.typeHashes = fresh
	}
	return h.sum(), ok
}

// knownTypes is the part of known the types seen so far this plan use,
// the start of the map handed to the next plan once a type was new.
func (w *working) knownTypes(known map[typeIdentity]uint64) map[typeIdentity]uint64 {
	out := map[typeIdentity]uint64{}
	for _, its := range w.typesByPool {
		for _, it := range its {
			if h, ok := known[identity(it)]; ok {
				out[identity(it)] = h
			}
		}
	}
	return out
}

// fingerprinter hashes the values written with hash/maphash (a 10,000-pod
// snapshot is a megabyte of names and versions every poll); maps are
// combined order-independently, as a sum of per-entry hashes. The seed is
// the process's: fingerprints are only compared within one process.
type fingerprinter struct {
	h   maphash.Hash
	buf [8]byte
}

var fingerprintSeed = maphash.MakeSeed()

func newFingerprinter() *fingerprinter {
	f := &fingerprinter{}
	f.h.SetSeed(fingerprintSeed)
	return f
}

func (f *fingerprinter) sum() uint64 { return f.h.Sum64() }

func (f *fingerprinter) str(s string) {
	f.int(len(s))
	_, _ = f.h.WriteString(s)
}

func (f *fingerprinter) u64(v uint64) {
	binary.LittleEndian.PutUint64(f.buf[:], v)
	_, _ = f.h.Write(f.buf[:])
}

func (f *fingerprinter) int(v int)       { f.u64(uint64(v)) }
func (f *fingerprinter) float(v float64) { f.u64(math.Float64bits(v)) }
func (f *fingerprinter) bool(v bool) {
	if v {
		f.u64(1)
	} else {
		f.u64(0)
	}
}

func (f *fingerprinter) labels(m map[string]string) {
	var sum uint64
	for k, v := range m {
		sum += maphash.String(fingerprintSeed, k) ^ maphash.String(fingerprintSeed, v)*31
	}
	f.int(len(m))
	f.u64(sum)
}

func (f *fingerprinter) resources(l corev1.ResourceList) {
	var sum uint64
	for n, q := range l {
		sum += maphash.String(fingerprintSeed, string(n)) ^ uint64(q.MilliValue())*31
	}
	f.int(len(l))
	f.u64(sum)
}

// fixedHash hashes what the solver and the planner read of a type besides
// its offerings.
func fixedHash(it *catalog.InstanceType) uint64 {
	f := newFingerprinter()
	f.str(it.Name)
	f.labels(it.Labels)
	f.resources(it.Capacity)
	f.resources(it.Overhead.KubeReserved)
	f.resources(it.Overhead.SystemReserved)
	f.resources(it.Overhead.EvictionThreshold)
	f.float(it.OnDemandPrice)
	return f.sum()
}

// offerings hashes a type's offerings as the plan sees them (prices move,
// availability follows the insufficient-capacity view).
func (f *fingerprinter) offerings(offs catalog.Offerings) {
	f.int(len(offs))
	for _, o := range offs {
		f.str(o.Zone)
		f.str(o.CapacityType)
		f.float(o.Price)
		f.bool(o.Available)
		f.float(o.InterruptionRisk)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
