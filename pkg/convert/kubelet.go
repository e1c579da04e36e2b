package convert

import (
	"k8s.io/apimachinery/pkg/runtime"

	"encoding/json"
	"fmt"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// kubeletMove is a v1beta1 pool's kubelet block on its way to the
// EC2NodeClass its nodeClassRef names (where v1 and Nodesmith keep it).
type kubeletMove struct {
	pool   *nsv1.NodePool
	class  string
	config *awsv1.KubeletConfiguration
	from   string // the pool, as Kind/name
}

// kubeletConfig converts a kubelet block. Settings that do not change what
// a node can hold (soft eviction, image GC, CFS quota) are not part of
// Nodesmith's EC2NodeClass and are reported.
func (c *converter) kubeletConfig(f *fields) *awsv1.KubeletConfiguration {
	k := &awsv1.KubeletConfiguration{}
	f.decode("maxPods", &k.MaxPods)
	f.decode("podsPerCore", &k.PodsPerCore)
	k.SystemReserved = c.stringMap(f, "systemReserved")
	k.KubeReserved = c.stringMap(f, "kubeReserved")
	k.EvictionHard = c.stringMap(f, "evictionHard")
	f.decode("clusterDNS", &k.ClusterDNS)
	f.done()
	return k
}

// stringMap reads a map whose values may be YAML numbers (cpu: 1) as strings.
func (c *converter) stringMap(f *fields, key string) map[string]string {
	var raw map[string]any
	if !f.decode(key, &raw) {
		return nil
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// placeKubelet moves every pool's kubelet block into its node class. Pools
// that share a class but not their kubelet settings get a copy of the class
// each, named <class>-<pool>, so every pool keeps the nodes it had.
func (c *converter) placeKubelet() {
	type variant struct {
		key   string
		class *awsv1.EC2NodeClass
	}
	variants := map[string][]variant{}
	for _, m := range c.kubelet {
		c.current = m.from
		b, _ := json.Marshal(m.config)
		key := string(b)
		class := c.classes[m.class]
		if class == nil {
			c.warn("spec.template.spec.kubelet", fmt.Sprintf("belongs in EC2NodeClass %s, which is not in this input; add kubelet: %s to its spec", m.class, key))
			continue
		}
		vs := variants[m.class]
		if len(vs) == 0 {
			if class.Spec.Kubelet != nil {
				b, _ := json.Marshal(class.Spec.Kubelet)
				vs = append(vs, variant{key: string(b), class: class})
			} else {
				class.Spec.Kubelet = m.config
				vs = append(vs, variant{key: key, class: class})
				c.warn("spec.template.spec.kubelet", fmt.Sprintf("moved to EC2NodeClass %s, where Nodesmith reads it", class.Name))
				variants[m.class] = vs
				continue
			}
		}
		var target *awsv1.EC2NodeClass
		for _, v := range vs {
			if v.key == key {
				target = v.class
			}
		}
		if target == nil {
			target = class.DeepCopy()
			target.Name = class.Name + "-" + m.pool.Name
			target.Spec.Kubelet = m.config
			c.insertAfter(class, target)
			vs = append(vs, variant{key: key, class: target})
			c.warn("spec.template.spec.kubelet", fmt.Sprintf("differs from the kubelet settings of EC2NodeClass %s (or of another pool using it); moved to a copy of the class, %s, which this pool now uses", class.Name, target.Name))
		} else if target == class {
			c.warn("spec.template.spec.kubelet", fmt.Sprintf("moved to EC2NodeClass %s, where Nodesmith reads it", class.Name))
		} else {
			c.warn("spec.template.spec.kubelet", fmt.Sprintf("moved to EC2NodeClass %s (a copy of %s with these settings), which this pool now uses", target.Name, class.Name))
		}
		m.pool.Spec.Template.Spec.NodeClassRef.Name = target.Name
		variants[m.class] = vs
	}
}

func (c *converter) insertAfter(after, obj *awsv1.EC2NodeClass) {
	for i, o := range c.out {
		if o == after {
			c.out = append(c.out[:i+1], append([]runtime.Object{obj}, c.out[i+1:]...)...)
			return
		}
	}
	c.out = append(c.out, obj)
}
