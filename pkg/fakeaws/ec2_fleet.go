package fakeaws

import (
	"encoding/base64"
	"strconv"
	"strings"
)

func (s *Server) createFleet(p params) (func(x *xmlw), error) {
	req := FleetRequest{
		ClientToken:         p.get("ClientToken"),
		Type:                p.get("Type"),
		DefaultCapacityType: p.get("TargetCapacitySpecification.DefaultTargetCapacityType"),
		SpotStrategy:        p.get("SpotOptions.AllocationStrategy"),
		OnDemandStrategy:    p.get("OnDemandOptions.AllocationStrategy"),
		InstanceTags:        p.tagSpecs("TagSpecification")["instance"],
		Fingerprint:         queryFingerprint(p, "ClientToken"),
	}
	if err := checkTags(req.InstanceTags); err != nil {
		return nil, err
	}
	if req.Type == "" {
		req.Type = "maintain" // the EC2 default; only instant is simulated
	}
	var err error
	ints := []struct {
		key string
		dst *int
	}{
		{"TargetCapacitySpecification.TotalTargetCapacity", &req.TotalTarget},
		{"TargetCapacitySpecification.OnDemandTargetCapacity", &req.OnDemandTarget},
		{"TargetCapacitySpecification.SpotTargetCapacity", &req.SpotTarget},
		{"SpotOptions.InstancePoolsToUseCount", &req.PoolsToUseCount},
		{"SpotOptions.MinTargetCapacity", &req.SpotMinTarget},
		{"OnDemandOptions.MinTargetCapacity", &req.OnDemandMinTarget},
	}
	for _, f := range ints {
		if *f.dst, err = p.int(f.key, 0); err != nil {
			return nil, err
		}
	}
	for _, cfg := range p.structs("LaunchTemplateConfigs") {
		spec := cfg + ".LaunchTemplateSpecification."
		base := FleetOverride{
			LaunchTemplateID:   p.get(spec + "LaunchTemplateId"),
			LaunchTemplateName: p.get(spec + "LaunchTemplateName"),
			Version:            p.get(spec + "Version"),
		}
		ovs := p.structs(cfg + ".Overrides")
		if len(ovs) == 0 {
			req.Overrides = append(req.Overrides, base)
			continue
		}
		for _, o := range ovs {
			fo := base
			fo.InstanceType = p.get(o + ".InstanceType")
			fo.SubnetID = p.get(o + ".SubnetId")
			fo.Zone = p.get(o + ".AvailabilityZone")
			fo.ImageID = p.get(o + ".ImageId")
			fo.Priority, fo.HasPriority = p.float(o + ".Priority")
			fo.MaxPrice, _ = p.float(o + ".MaxPrice")
			fo.WeightedCapacity, _ = p.float(o + ".WeightedCapacity")
			req.Overrides = append(req.Overrides, fo)
		}
	}
	res, err := s.w.CreateFleet(req)
	if err != nil {
		return nil, err
	}
	zones := s.w.instanceZones(res)
	subnetZones := map[string]string{}
	for _, sn := range s.w.Subnets() {
		subnetZones[sn.ID] = sn.Zone
	}
	return func(x *xmlw) {
		x.leaf("fleetId", res.FleetID)
		x.open("errorSet")
		for _, e := range res.Errors {
			x.open("item")
			if e.Override >= 0 {
				o := req.Overrides[e.Override]
				ltAndOverrides(x, o, subnetZones[o.SubnetID])
			}
			x.leaf("lifecycle", e.Lifecycle)
			x.leaf("errorCode", e.Code)
			x.leaf("errorMessage", e.Message)
			x.close("item")
		}
		x.close("errorSet")
		x.open("fleetInstanceSet")
		for _, l := range res.Launches {
			o := req.Overrides[l.Override]
			zone := zones[l.InstanceIDs[0]]
			x.open("item")
			ltAndOverrides(x, o, zone)
			x.leaf("lifecycle", l.Lifecycle)
			x.items("instanceIds", l.InstanceIDs)
			if o.InstanceType != "" {
				x.leaf("instanceType", o.InstanceType)
			}
			x.close("item")
		}
		x.close("fleetInstanceSet")
	}, nil
}

func ltAndOverrides(x *xmlw, o FleetOverride, zone string) {
	x.open("launchTemplateAndOverrides")
	x.open("launchTemplateSpecification")
	if o.LaunchTemplateID != "" {
		x.leaf("launchTemplateId", o.LaunchTemplateID)
	}
	if o.LaunchTemplateName != "" {
		x.leaf("launchTemplateName", o.LaunchTemplateName)
	}
	if o.Version != "" {
		x.leaf("version", o.Version)
	}
	x.close("launchTemplateSpecification")
	x.open("overrides")
	if o.InstanceType != "" {
		x.leaf("instanceType", o.InstanceType)
	}
	if o.SubnetID != "" {
		x.leaf("subnetId", o.SubnetID)
	}
	if zone == "" {
		zone = o.Zone
	}
	if zone != "" {
		x.leaf("availabilityZone", zone)
	}
	if o.ImageID != "" {
		x.leaf("imageId", o.ImageID)
	}
	if o.HasPriority {
		x.leaf("priority", strconv.FormatFloat(o.Priority, 'f', -1, 64))
	}
	if o.MaxPrice > 0 {
		x.leaf("maxPrice", strconv.FormatFloat(o.MaxPrice, 'f', -1, 64))
	}
	x.close("overrides")
	x.close("launchTemplateAndOverrides")
}

// instanceZones maps the result's instance ids to their zones.
func (w *World) instanceZones(res FleetResult) map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for _, l := range res.Launches {
		for _, id := range l.InstanceIDs {
			if in, ok := w.instances[id]; ok {
				out[id] = in.Zone
			}
		}
	}
	return out
}

func (s *Server) createLaunchTemplate(p params) (func(x *xmlw), error) {
	const d = "LaunchTemplateData."
	lt := LaunchTemplate{
		Name:         p.get("LaunchTemplateName"),
		ImageID:      p.get(d + "ImageId"),
		InstanceType: p.get(d + "InstanceType"),
		Tags:         p.tagSpecs("TagSpecification")["launch-template"],
		InstanceTags: p.tagSpecs(d + "TagSpecification")["instance"],
		Data:         map[string]string{},
	}
	for _, k := range p.withPrefix(d) {
		lt.Data[strings.TrimPrefix(k, d)] = p.get(k)
	}
	if ud := p.get(d + "UserData"); ud != "" {
		raw, err := base64.StdEncoding.DecodeString(ud)
		if err != nil {
			return nil, apiErr(400, "InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
		}
		if len(raw) > 16*1024 {
			return nil, apiErr(400, "InvalidParameterValue", "User data is limited to 16384 bytes")
		}
		lt.UserData = string(raw)
	}
	lt.SecurityGroupIDs = p.list(d + "SecurityGroupId")
	for _, ni := range p.structs(d + "NetworkInterface") {
		lt.SecurityGroupIDs = append(lt.SecurityGroupIDs, p.list(ni+".SecurityGroupId")...)
	}
	if lt.ImageID != "" && !imageIDs.wellFormed(lt.ImageID) {
		return nil, imageIDs.malformedErr(lt.ImageID)
	}
	if err := groupIDs.checkIDs(lt.SecurityGroupIDs); err != nil {
		return nil, err
	}
	if err := checkTags(lt.Tags); err != nil {
		return nil, err
	}
	if err := checkTags(lt.InstanceTags); err != nil {
		return nil, err
	}
	if lt.ImageID != "" && !s.w.imageExists(lt.ImageID) {
		return nil, apiErr(400, "InvalidAMIID.NotFound", "The image id '[%s]' does not exist", lt.ImageID)
	}
	for _, g := range lt.SecurityGroupIDs {
		if !s.w.groupExists(g) {
			return nil, apiErr(400, "InvalidGroup.NotFound", "The security group '%s' does not exist", g)
		}
	}
	created, err := s.w.CreateLaunchTemplate(lt)
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) {
		x.open("launchTemplate")
		launchTemplateXML(x, created)
		x.close("launchTemplate")
	}, nil
}

func launchTemplateXML(x *xmlw, lt LaunchTemplate) {
	x.leaf("launchTemplateId", lt.ID)
	x.leaf("launchTemplateName", lt.Name)
	x.leafTime("createTime", lt.CreateTime)
	x.leaf("createdBy", "arn:aws:iam::123456789012:role/nodesmith")
	x.leafInt("defaultVersionNumber", 1)
	x.leafInt("latestVersionNumber", 1)
	if len(lt.Tags) > 0 {
		x.tagSet(lt.Tags)
	}
}

func (s *Server) describeLaunchTemplates(p params) (func(x *xmlw), error) {
	ids, names := p.list("LaunchTemplateId"), p.list("LaunchTemplateName")
	if err := templateIDs.checkIDs(ids); err != nil {
		return nil, err
	}
	fs := p.filters()
	var out []LaunchTemplate
	all := s.w.LaunchTemplates()
	for _, lt := range all {
		if len(ids) > 0 && !contains(ids, lt.ID) || len(names) > 0 && !contains(names, lt.Name) {
			continue
		}
		ok, err := matchAll(fs, func(n string) ([]string, bool) {
			switch n {
			case "launch-template-name":
				return []string{lt.Name}, true
			case "create-time":
				return []string{ec2Time(lt.CreateTime)}, true
			}
			return nil, false
		}, lt.Tags)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, lt)
		}
	}
	// Naming a template that does not exist is an error, as in EC2.
	for _, n := range names {
		if !hasTemplate(all, "", n) {
			return nil, templateNotFound("", n)
		}
	}
	for _, id := range ids {
		if !hasTemplate(all, id, "") {
			return nil, templateNotFound(id, "")
		}
	}
	from, to, next, err := page(p, len(out), 0, 1, 200)
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) {
		x.open("launchTemplates")
		for _, lt := range out[from:to] {
			x.open("item")
			launchTemplateXML(x, lt)
			x.close("item")
		}
		x.close("launchTemplates")
		if next != "" {
			x.leaf("nextToken", next)
		}
	}, nil
}

func hasTemplate(all []LaunchTemplate, id, name string) bool {
	for _, lt := range all {
		if id != "" && lt.ID == id || name != "" && lt.Name == name {
			return true
		}
	}
	return false
}

func (s *Server) deleteLaunchTemplate(p params) (func(x *xmlw), error) {
	if id := p.get("LaunchTemplateId"); id != "" && !templateIDs.wellFormed(id) {
		return nil, templateIDs.malformedErr(id)
	}
	lt, err := s.w.DeleteLaunchTemplate(p.get("LaunchTemplateId"), p.get("LaunchTemplateName"))
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) {
		x.open("launchTemplate")
		launchTemplateXML(x, lt)
		x.close("launchTemplate")
	}, nil
}

func (w *World) imageExists(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.image(id) != nil
}

func (w *World) groupExists(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range w.groups {
		if g.ID == id {
			return true
		}
	}
	return false
}
