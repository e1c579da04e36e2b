package fakeaws

import (
	"strconv"
	"strings"
)

func (s *Server) describeInstances(p params) (func(x *xmlw), error) {
	ids := p.list("InstanceId")
	if len(ids) > 0 && p.has("MaxResults") {
		return nil, apiErr(400, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	all := s.w.Instances()
	known := map[string]bool{}
	for _, in := range all {
		known[in.ID] = true
	}
	for _, id := range ids {
		if !known[id] {
			return nil, apiErr(400, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	fs := p.filters()
	var out []Instance
	for _, in := range all {
		if len(ids) > 0 && !contains(ids, in.ID) {
			continue
		}
		ok, err := matchAll(fs, instanceAttr(in), in.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, in)
		}
	}
	from, to, next, err := page(p, len(out), 0, 5, 1000)
	if err != nil {
		return nil, err
	}
	groups := s.w.groupNames()
	owner := s.w.opts.AccountID
	return func(x *xmlw) {
		x.open("reservationSet")
		window := out[from:to]
		for i := 0; i < len(window); {
			j := i
			for j < len(window) && window[j].ReservationID == window[i].ReservationID {
				j++
			}
			x.open("item")
			x.leaf("reservationId", window[i].ReservationID)
			x.leaf("ownerId", owner)
			x.open("groupSet")
			x.close("groupSet")
			x.open("instancesSet")
			for _, in := range window[i:j] {
				x.open("item")
				instanceXML(x, in, groups)
				x.close("item")
			}
			x.close("instancesSet")
			x.close("item")
			i = j
		}
		x.close("reservationSet")
		if next != "" {
			x.leaf("nextToken", next)
		}
	}, nil
}

func instanceAttr(in Instance) attrFunc {
	return func(n string) ([]string, bool) {
		switch n {
		case "instance-id":
			return []string{in.ID}, true
		case "instance-state-name":
			return []string{in.State}, true
		case "instance-state-code":
			return []string{strconv.Itoa(stateCode(in.State))}, true
		case "instance-type":
			return []string{in.Type}, true
		case "availability-zone":
			return []string{in.Zone}, true
		case "subnet-id":
			return []string{in.SubnetID}, true
		case "vpc-id":
			return []string{in.VpcID}, true
		case "image-id":
			return []string{in.ImageID}, true
		case "instance-lifecycle":
			if in.CapacityType == CapacitySpot {
				return []string{"spot"}, true
			}
			return nil, true
		case "private-ip-address":
			return []string{in.PrivateIP}, true
		case "architecture":
			return []string{in.Arch}, true
		case "reservation-id":
			return []string{in.ReservationID}, true
		case "client-token":
			return []string{in.ClientToken}, true
		case "instance.group-id":
			return in.SecurityGroupIDs, true
		}
		return nil, false
	}
}

func privateDNS(ip, region string) string {
	host := "ip-" + strings.ReplaceAll(ip, ".", "-")
	if region == "us-east-1" {
		return host + ".ec2.internal"
	}
	return host + "." + region + ".compute.internal"
}

func instanceXML(x *xmlw, in Instance, groups map[string]string) {
	x.leaf("instanceId", in.ID)
	x.leaf("imageId", in.ImageID)
	x.open("instanceState")
	x.leafInt("code", stateCode(in.State))
	x.leaf("name", in.State)
	x.close("instanceState")
	dns := ""
	if in.State != StateTerminated {
		dns = privateDNS(in.PrivateIP, regionOf(in.Zone))
	}
	x.leaf("privateDnsName", dns)
	x.leaf("dnsName", "")
	x.leafInt("amiLaunchIndex", 0)
	x.leaf("instanceType", in.Type)
	x.leafTime("launchTime", in.LaunchTime)
	x.open("placement")
	x.leaf("availabilityZone", in.Zone)
	x.leaf("tenancy", "default")
	x.close("placement")
	x.open("monitoring")
	x.leaf("state", "disabled")
	x.close("monitoring")
	if in.State != StateTerminated {
		x.leaf("subnetId", in.SubnetID)
		x.leaf("vpcId", in.VpcID)
		x.leaf("privateIpAddress", in.PrivateIP)
	}
	x.open("groupSet")
	for _, g := range in.SecurityGroupIDs {
		x.open("item")
		x.leaf("groupId", g)
		x.leaf("groupName", groups[g])
		x.close("item")
	}
	x.close("groupSet")
	if in.State == StateShuttingDown || in.State == StateTerminated {
		code, msg := "Client.UserInitiatedShutdown", "Client.UserInitiatedShutdown: User initiated shutdown"
		if !in.InterruptAt.IsZero() {
			code, msg = "Server.SpotInstanceTermination", "Server.SpotInstanceTermination: Spot instance termination"
		}
		x.open("stateReason")
		x.leaf("code", code)
		x.leaf("message", msg)
		x.close("stateReason")
	}
	x.leaf("architecture", in.Arch)
	x.leaf("rootDeviceType", "ebs")
	x.leaf("rootDeviceName", "/dev/xvda")
	x.leaf("virtualizationType", "hvm")
	x.leaf("hypervisor", "xen")
	if in.CapacityType == CapacitySpot {
		x.leaf("instanceLifecycle", "spot")
		x.leaf("spotInstanceRequestId", "sir-"+in.ID[2:10])
	}
	if in.ClientToken != "" {
		x.leaf("clientToken", in.ClientToken)
	}
	if len(in.Tags) > 0 {
		x.tagSet(in.Tags)
	}
}

func regionOf(zone string) string {
	if zone == "" {
		return ""
	}
	return strings.TrimRight(zone, "abcdefghijklmnopqrstuvwxyz")
}

func (w *World) groupNames() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for _, g := range w.groups {
		out[g.ID] = g.Name
	}
	return out
}

func (s *Server) terminateInstances(p params) (func(x *xmlw), error) {
	ids := p.list("InstanceId")
	if len(ids) == 0 {
		return nil, apiErr(400, "MissingParameter", "The request must contain the parameter InstanceId")
	}
	changes, err := s.w.TerminateInstances(ids)
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) {
		x.open("instancesSet")
		for _, c := range changes {
			x.open("item")
			x.leaf("instanceId", c.ID)
			x.open("currentState")
			x.leafInt("code", stateCode(c.Current))
			x.leaf("name", c.Current)
			x.close("currentState")
			x.open("previousState")
			x.leafInt("code", stateCode(c.Previous))
			x.leaf("name", c.Previous)
			x.close("previousState")
			x.close("item")
		}
		x.close("instancesSet")
	}, nil
}

func (s *Server) createTags(p params) (func(x *xmlw), error) {
	ids := p.list("ResourceId")
	if len(ids) == 0 {
		return nil, apiErr(400, "MissingParameter", "The request must contain the parameter ResourceId")
	}
	if err := s.w.CreateTags(ids, p.tags("Tag")); err != nil {
		return nil, err
	}
	return func(x *xmlw) { x.leafBool("return", true) }, nil
}
