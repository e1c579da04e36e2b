package state

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Capacity buffers' virtual pods, as the capacitybuffer controller
// resolved them (provisioning.ResolveBuffer), by buffer (namespace/name).
// They live only here: the provisioner plans room for them after the real
// pending pods, and the disruption planner keeps that room.

// SetBufferPods records a buffer's virtual pods; none forgets the buffer.
func (c *Cluster) SetBufferPods(key string, pods []*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buffers == nil {
		c.buffers = map[string][]*corev1.Pod{}
	}
	if len(pods) == 0 {
		delete(c.buffers, key)
		return
	}
	c.buffers[key] = pods
}

// BufferPods are every buffer's virtual pods, in buffer order. The pods
// are shared: callers must not mutate them.
func (c *Cluster) BufferPods() []*corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.buffers))
	for k := range c.buffers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []*corev1.Pod
	for _, k := range keys {
		out = append(out, c.buffers[k]...)
	}
	return out
}
