package provisioning

import (
	"encoding/binary"
	"hash/maphash"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// versionSeed seeds the versions' hash: versions are compared only within
// one process.
var versionSeed = maphash.MakeSeed()

// Version identifies the snapshot's objects: every object of every list by
// UID (namespace and name without one) and resourceVersion, which any write
// bumps. Two snapshots of one process with the same Version hold the same
// objects in the same state (up to a 64-bit hash collision). ok is false
// when an object carries no resourceVersion (built by hand, not read from
// an API server): such a snapshot has no version.
func (s *Snapshot) Version() (uint64, bool) {
	v := newVersioner()
	writeList(v, s.Pods)
	writeList(v, s.Nodes)
	writeList(v, s.NodeClaims)
	writeList(v, s.NodePools)
	writeList(v, s.DaemonSets)
	writeList(v, s.PDBs)
	// Volume topology reads the storage (nil: none).
	var st Storage
	if s.Storage != nil {
		st = *s.Storage
	}
	writeList(v, st.claimList)
	writeList(v, st.volumeList)
	writeList(v, st.classList)
	return v.h.Sum64(), v.ok
}

// ObjectsVersion is Version for one list of objects.
func ObjectsVersion[T metav1.Object](objs []T) (uint64, bool) {
	v := newVersioner()
	writeList(v, objs)
	return v.h.Sum64(), v.ok
}

type versioner struct {
	h   maphash.Hash
	buf [8]byte
	ok  bool
}

func newVersioner() *versioner {
	v := &versioner{ok: true}
	v.h.SetSeed(versionSeed)
	return v
}

func (v *versioner) count(n int) {
	binary.LittleEndian.PutUint64(v.buf[:], uint64(n))
	_, _ = v.h.Write(v.buf[:])
}

func (v *versioner) str(s string) {
	v.count(len(s))
	_, _ = v.h.WriteString(s)
}

func writeList[T metav1.Object](v *versioner, objs []T) {
	v.count(len(objs))
	for _, o := range objs {
		rv := o.GetResourceVersion()
		if rv == "" {
			v.ok = false
		}
		uid := string(o.GetUID())
		if uid == "" {
			v.str(o.GetNamespace())
			v.str(o.GetName())
		}
		v.str(uid)
		v.str(rv)
	}
}
