package provisioning

import (
	"encoding/binary"
	"hash/maphash"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// versionSeed seeds Version's hash: versions are compared only within
// one process.
var versionSeed = maphash.MakeSeed()

// Version identifies the snapshot's objects: every object of every list by
// UID (namespace and name without one) and resourceVersion, which any write
// bumps. Two snapshots of one process with the same Version hold the same
// objects in the same state (up to a 64-bit hash collision). ok is false
// when an object carries no resourceVersion (built by hand, not read from
// an API server): such a snapshot has no version.
func (s *Snapshot) Version() (v uint64, ok bool) {
	var h maphash.Hash
	h.SetSeed(versionSeed)
	ok = true
	var buf [8]byte
	count := func(n int) {
		binary.LittleEndian.PutUint64(buf[:], uint64(n))
		_, _ = h.Write(buf[:])
	}
	str := func(s string) {
		count(len(s))
		_, _ = h.WriteString(s)
	}
	obj := func(m *metav1.ObjectMeta) {
		if m.ResourceVersion == "" {
			ok = false
		}
		if m.UID == "" {
			str(m.Namespace)
			str(m.Name)
		}
		str(string(m.UID))
		str(m.ResourceVersion)
	}
	count(len(s.Pods))
	for _, o := range s.Pods {
		obj(&o.ObjectMeta)
	}
	count(len(s.Nodes))
	for _, o := range s.Nodes {
		obj(&o.ObjectMeta)
	}
	count(len(s.NodeClaims))
	for _, o := range s.NodeClaims {
		obj(&o.ObjectMeta)
	}
	count(len(s.NodePools))
	for _, o := range s.NodePools {
		obj(&o.ObjectMeta)
	}
	count(len(s.DaemonSets))
	for _, o := range s.DaemonSets {
		obj(&o.ObjectMeta)
	}
	count(len(s.PDBs))
	for _, o := range s.PDBs {
		obj(&o.ObjectMeta)
	}
	return h.Sum64(), ok
}
