package scheduler

// Nodes get small integer ids so that per-node counts are slices and a
// node's topology domain is a slice lookup; the plugins' maps keyed by
// node name and topology pair were most of a cycle's cost.

// domainIndex numbers the values of one node label (a topology key) over
// the nodes in the snapshot. It is rebuilt after any node change.
type domainIndex struct {
	values []string
	of     []int32 // node id → index in values; -1: no label, or not in the snapshot
	empty  int32   // index of the value "", -1 if no node has it
}

func (d *domainIndex) at(id int) int32 {
	if id >= len(d.of) {
		return -1
	}
	return d.of[id]
}

// orEmpty maps "no label" to the "" domain, for the places where upstream
// reads node.Labels[key] without checking that the label exists. The slot
// is len(values) when no node has the label with an empty value.
func (d *domainIndex) orEmpty(j int32) int32 {
	switch {
	case j >= 0:
		return j
	case d.empty >= 0:
		return d.empty
	}
	return int32(len(d.values))
}

func (s *Scheduler) domains(key string) *domainIndex {
	if d, ok := s.domainCache[key]; ok {
		return d
	}
	d := &domainIndex{of: make([]int32, s.nextID), empty: -1}
	for i := range d.of {
		d.of[i] = -1
	}
	index := map[string]int32{}
	for _, ni := range s.nodeList() {
		v, ok := ni.node.Labels[key]
		if !ok {
			continue
		}
		j, seen := index[v]
		if !seen {
			j = int32(len(d.values))
			index[v] = j
			d.values = append(d.values, v)
			if v == "" {
				d.empty = j
			}
		}
		d.of[ni.id] = j
	}
	s.domainCache[key] = d
	return d
}

// nodeCounts is a per-node count indexed by node id.
type nodeCounts []int32

func (c *nodeCounts) add(id int, delta int32) {
	for id >= len(*c) {
		*c = append(*c, 0)
	}
	(*c)[id] += delta
}

func (c nodeCounts) at(id int) int32 {
	if id >= len(c) {
		return 0
	}
	return c[id]
}

// domainSums accumulates a signed sum per value of one topology key.
type domainSums struct {
	dom *domainIndex
	sum []int64
	set []bool // the upstream map would have an entry for the value
}

// topoSums is keyed by topology key.
type topoSums map[string]*domainSums

// addCounts adds n times each snapshot node's count to the node's domain
// of key; nodes without the label add nothing.
func (s *Scheduler) addCounts(m topoSums, key string, counts nodeCounts, n int64) {
	ds := m[key]
	if ds == nil {
		d := s.domains(key)
		ds = &domainSums{dom: d, sum: make([]int64, len(d.values)), set: make([]bool, len(d.values))}
		m[key] = ds
	}
	for id, c := range counts {
		if c == 0 {
			continue
		}
		if j := ds.dom.at(id); j >= 0 {
			ds.sum[j] += int64(c) * n
			ds.set[j] = true
		}
	}
}

// empty reports that no entry was ever added (upstream: an empty map).
func (m topoSums) empty() bool {
	for _, ds := range m {
		for _, set := range ds.set {
			if set {
				return false
			}
		}
	}
	return true
}

// at is the sum in the domain of node id for key (0 if none).
func (m topoSums) at(key string, id int) int64 {
	ds := m[key]
	if ds == nil {
		return 0
	}
	if j := ds.dom.at(id); j >= 0 {
		return ds.sum[j]
	}
	return 0
}
