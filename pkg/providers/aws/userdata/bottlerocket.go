package userdata

import (
	"bufio"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// Bottlerocket reads TOML settings; we write only the small subset the
// node needs and parse back the same subset, so no TOML library is needed.
const (
	tableKubernetes = "settings.kubernetes"
	tableLabels     = "settings.kubernetes.node-labels"
	tableTaints     = "settings.kubernetes.node-taints"
)

// Bottlerocket names the kubelet's reservations and thresholds as tables
// under settings.kubernetes.
var bottlerocketMaps = []struct {
	table string
	get   func(*awsv1.KubeletConfiguration) map[string]string
}{
	{"settings.kubernetes.system-reserved", func(k *awsv1.KubeletConfiguration) map[string]string { return k.SystemReserved }},
	{"settings.kubernetes.kube-reserved", func(k *awsv1.KubeletConfiguration) map[string]string { return k.KubeReserved }},
	{"settings.kubernetes.eviction-hard", func(k *awsv1.KubeletConfiguration) map[string]string { return k.EvictionHard }},
}

func renderBottlerocket(o Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s]\n", tableKubernetes)
	fmt.Fprintf(&b, "cluster-name = %s\n", strconv.Quote(o.ClusterName))
	fmt.Fprintf(&b, "api-server = %s\n", strconv.Quote(o.Endpoint))
	fmt.Fprintf(&b, "cluster-certificate = %s\n", strconv.Quote(o.CABundle))
	// Bottlerocket has no pods-per-core: max-pods is the type's pod limit
	// as the catalog computes it (maxPods, podsPerCore × vCPUs, the ENI
	// limit), which the caller passes per group of types.
	if o.MaxPods > 0 {
		fmt.Fprintf(&b, "max-pods = %d\n", o.MaxPods)
	} else if k := o.Kubelet; k != nil && k.MaxPods != nil {
		fmt.Fprintf(&b, "max-pods = %d\n", *k.MaxPods)
	}
	k := o.Kubelet
	if k != nil && len(k.ClusterDNS) > 0 {
		fmt.Fprintf(&b, "cluster-dns-ip = %s\n", quoteList(k.ClusterDNS))
	}
	if k != nil {
		for _, m := range bottlerocketMaps {
			writeTable(&b, m.table, m.get(k))
		}
	}
	writeTable(&b, tableLabels, o.Labels)
	if len(o.Taints) > 0 {
		fmt.Fprintf(&b, "\n[%s]\n", tableTaints)
		// Bottlerocket groups taints by key: "key" = ["value:Effect", ...].
		byKey := map[string][]string{}
		var keys []string
		for _, t := range sortedTaints(o.Taints) {
			if _, ok := byKey[t.Key]; !ok {
				keys = append(keys, t.Key)
			}
			byKey[t.Key] = append(byKey[t.Key], t.Value+":"+string(t.Effect))
		}
		for _, k := range keys {
			fmt.Fprintf(&b, "%s = %s\n", strconv.Quote(k), quoteList(byKey[k]))
		}
	}
	if c := strings.TrimSpace(o.Custom); c != "" {
		// Appended: the node class's TOML must not repeat our tables.
		b.WriteString("\n" + c + "\n")
	}
	return b.String()
}

// writeTable writes a TOML table of quoted keys and string values, sorted
// so equal inputs give byte-equal user data; an empty map writes nothing.
func writeTable(b *strings.Builder, table string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(b, "\n[%s]\n", table)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "%s = %s\n", strconv.Quote(k), strconv.Quote(m[k]))
	}
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// parseBottlerocket reads node-labels and node-taints back.
func parseBottlerocket(s string) (map[string]string, []corev1.Taint, error) {
	labels := map[string]string{}
	var taints []corev1.Taint
	table := ""
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			table = strings.TrimSpace(strings.Trim(line, "[]"))
			continue
		}
		if table != tableLabels && table != tableTaints {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, nil, fmt.Errorf("toml line %q is not key = value", line)
		}
		key, err := unquoteKey(strings.TrimSpace(k))
		if err != nil {
			return nil, nil, err
		}
		v = strings.TrimSpace(v)
		if table == tableLabels {
			val, err := strconv.Unquote(v)
			if err != nil {
				return nil, nil, fmt.Errorf("label %s: %w", key, err)
			}
			labels[key] = val
			continue
		}
		vals, err := unquoteList(v)
		if err != nil {
			return nil, nil, fmt.Errorf("taint %s: %w", key, err)
		}
		for _, val := range vals {
			t, err := parseTaint(key + "=" + val)
			if err != nil {
				return nil, nil, err
			}
			taints = append(taints, t)
		}
	}
	return labels, taints, sc.Err()
}

func unquoteKey(k string) (string, error) {
	if strings.HasPrefix(k, `"`) {
		return strconv.Unquote(k)
	}
	return k, nil
}

func unquoteList(v string) ([]string, error) {
	if !strings.HasPrefix(v, "[") || !strings.HasSuffix(v, "]") {
		s, err := strconv.Unquote(v)
		return []string{s}, err
	}
	inner := strings.TrimSpace(v[1 : len(v)-1])
	if inner == "" {
		return nil, nil
	}
	var out []string
	for _, item := range strings.Split(inner, ",") {
		s, err := strconv.Unquote(strings.TrimSpace(item))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
