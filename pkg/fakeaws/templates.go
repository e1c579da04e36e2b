package fakeaws

import (
	"sort"
)

// CreateLaunchTemplate stores a template; the name must be unique.
func (w *World) CreateLaunchTemplate(lt LaunchTemplate) (LaunchTemplate, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if lt.Name == "" {
		return LaunchTemplate{}, apiErr(400, "MissingParameter", "The request must contain the parameter LaunchTemplateName")
	}
	if w.findTemplate("", lt.Name) != nil {
		return LaunchTemplate{}, apiErr(400, "InvalidLaunchTemplateName.AlreadyExistsException",
			"Launch template name already in use.")
	}
	lt.ID = "lt-" + w.hex(17)
	lt.CreateTime = w.clock.Now()
	lt.Tags = cloneTags(lt.Tags)
	lt.InstanceTags = cloneTags(lt.InstanceTags)
	w.templates[lt.ID] = &lt
	w.ltOrder = append(w.ltOrder, lt.ID)
	return cloneTemplate(&lt), nil
}

// DeleteLaunchTemplate removes a template by id or name.
func (w *World) DeleteLaunchTemplate(id, name string) (LaunchTemplate, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	lt := w.findTemplate(id, name)
	if lt == nil {
		return LaunchTemplate{}, templateNotFound(id, name)
	}
	delete(w.templates, lt.ID)
	for i, x := range w.ltOrder {
		if x == lt.ID {
			w.ltOrder = append(w.ltOrder[:i], w.ltOrder[i+1:]...)
			break
		}
	}
	return cloneTemplate(lt), nil
}

// LaunchTemplates returns a snapshot of the templates in creation order.
func (w *World) LaunchTemplates() []LaunchTemplate {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]LaunchTemplate, 0, len(w.ltOrder))
	for _, id := range w.ltOrder {
		out = append(out, cloneTemplate(w.templates[id]))
	}
	return out
}

func templateNotFound(id, name string) *APIError {
	if id != "" {
		return apiErr(400, "InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	}
	return apiErr(400, "InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
}

func (w *World) findTemplate(id, name string) *LaunchTemplate {
	if id != "" {
		return w.templates[id]
	}
	for _, lt := range w.templates {
		if lt.Name == name {
			return lt
		}
	}
	return nil
}

func cloneTemplate(lt *LaunchTemplate) LaunchTemplate {
	c := *lt
	c.Tags = cloneTags(lt.Tags)
	c.InstanceTags = cloneTags(lt.InstanceTags)
	c.SecurityGroupIDs = append([]string(nil), lt.SecurityGroupIDs...)
	c.Data = cloneTags(lt.Data)
	return c
}

// TerminateInstances starts terminating the instances; unknown ids fail the
// whole call, as EC2 does. It returns each instance's previous and current state.
func (w *World) TerminateInstances(ids []string) ([]StateChange, error) {
	w.mu.Lock()
	defer w.unlock()
	w.tickLocked()
	for _, id := range ids {
		if _, ok := w.instances[id]; !ok {
			return nil, apiErr(400, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	now := w.clock.Now()
	out := make([]StateChange, 0, len(ids))
	for _, id := range ids {
		in := w.instances[id]
		prev := in.State
		w.beginTerminate(in, now)
		out = append(out, StateChange{ID: id, Previous: prev, Current: in.State})
	}
	return out, nil
}

// StateChange is one TerminateInstances result.
type StateChange struct{ ID, Previous, Current string }

// tagsOf finds the tag map of any taggable resource.
func (w *World) tagsOf(id string) *map[string]string {
	if in, ok := w.instances[id]; ok {
		return &in.Tags
	}
	if lt, ok := w.templates[id]; ok {
		return &lt.Tags
	}
	for _, s := range w.subnets {
		if s.ID == id {
			return &s.Tags
		}
	}
	for _, g := range w.groups {
		if g.ID == id {
			return &g.Tags
		}
	}
	for _, i := range w.images {
		if i.ID == id {
			return &i.Tags
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
