package scheduler

import corev1 "k8s.io/api/core/v1"

const bindAllHostIP = "0.0.0.0"

type protoPort struct {
	proto string
	port  int32
}

// portSet is a node's used host ports: (protocol, port) → host IP → pods.
type portSet map[protoPort]map[string]int

func sanitize(cp corev1.ContainerPort) (string, protoPort) {
	ip, proto := cp.HostIP, string(cp.Protocol)
	if ip == "" {
		ip = bindAllHostIP
	}
	if proto == "" {
		proto = string(corev1.ProtocolTCP)
	}
	return ip, protoPort{proto: proto, port: cp.HostPort}
}

func (ps portSet) add(cp corev1.ContainerPort, delta int) {
	ip, pp := sanitize(cp)
	ips := ps[pp]
	if ips == nil {
		ips = map[string]int{}
		ps[pp] = ips
	}
	ips[ip] += delta
	if ips[ip] <= 0 {
		delete(ips, ip)
	}
	if len(ips) == 0 {
		delete(ps, pp)
	}
}

// conflicts is HostPortInfo.CheckConflict: a wildcard IP collides with the
// same protocol and port on any IP, a specific IP with itself and the
// wildcard.
func (ps portSet) conflicts(cp corev1.ContainerPort) bool {
	ip, pp := sanitize(cp)
	ips := ps[pp]
	if len(ips) == 0 {
		return false
	}
	if ip == bindAllHostIP {
		return true
	}
	return ips[ip] > 0 || ips[bindAllHostIP] > 0
}

// hostPorts is the scheduler's GetHostPorts: host ports of the containers
// and of sidecar (restartPolicy: Always) init containers.
func hostPorts(p *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		for _, cp := range c.Ports {
			if cp.HostPort > 0 {
				out = append(out, cp)
			}
		}
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.HostPort > 0 {
				out = append(out, cp)
			}
		}
	}
	return out
}
