package tfpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
)

// Values stand in for what Terraform learns from the account and the
// caller: the variables and the data sources the document reads.
type Values struct {
	// Variables override defaults (cluster_name is required by the example).
	Variables map[string]string
	AccountID string
	Region    string
	// Partition defaults to "aws".
	Partition string
}

// Module is a parsed Terraform directory.
type Module struct {
	Files  map[string]*hcl.File
	blocks []*hclsyntax.Block
}

// Load parses every .tf file of dir.
func Load(dir string) (*Module, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no .tf files in %s", dir)
	}
	sort.Strings(paths)
	p := hclparse.NewParser()
	m := &Module{Files: map[string]*hcl.File{}}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		f, diags := p.ParseHCL(src, path)
		if diags.HasErrors() {
			return nil, fmt.Errorf("parsing %s: %s", path, diags.Error())
		}
		m.Files[path] = f
		body, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			return nil, fmt.Errorf("%s is not native HCL syntax", path)
		}
		m.blocks = append(m.blocks, body.Blocks...)
	}
	return m, nil
}

// Blocks returns the top-level blocks of a type ("resource", "data", …)
// whose labels start with labels.
func (m *Module) Blocks(typ string, labels ...string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range m.blocks {
		if b.Type != typ || len(b.Labels) < len(labels) {
			continue
		}
		match := true
		for i, l := range labels {
			match = match && b.Labels[i] == l
		}
		if match {
			out = append(out, b)
		}
	}
	return out
}

var functions = map[string]function.Function{
	"replace": replaceFunc, "format": stdlib.FormatFunc, "lower": stdlib.LowerFunc,
	"jsonencode": stdlib.JSONEncodeFunc, "coalesce": stdlib.CoalesceFunc,
}

// EvalContext builds the context the module's expressions are evaluated in.
func (m *Module) EvalContext(v Values) (*hcl.EvalContext, error) {
	part := v.Partition
	if part == "" {
		part = "aws"
	}
	vars := map[string]cty.Value{}
	for _, b := range m.Blocks("variable") {
		if len(b.Labels) != 1 {
			continue
		}
		if def, ok := b.Body.Attributes["default"]; ok {
			val, diags := def.Expr.Value(nil)
			if diags.HasErrors() {
				return nil, fmt.Errorf("variable %s default: %s", b.Labels[0], diags.Error())
			}
			vars[b.Labels[0]] = val
		}
	}
	for k, val := range v.Variables {
		vars[k] = cty.StringVal(val)
	}
	ctx := &hcl.EvalContext{Functions: functions, Variables: map[string]cty.Value{
		"var": cty.ObjectVal(vars),
		"data": cty.ObjectVal(map[string]cty.Value{
			"aws_caller_identity": cty.ObjectVal(map[string]cty.Value{"current": cty.ObjectVal(map[string]cty.Value{"account_id": cty.StringVal(v.AccountID)})}),
			"aws_partition":       cty.ObjectVal(map[string]cty.Value{"current": cty.ObjectVal(map[string]cty.Value{"partition": cty.StringVal(part)})}),
			"aws_region": cty.ObjectVal(map[string]cty.Value{"current": cty.ObjectVal(map[string]cty.Value{
				"name": cty.StringVal(v.Region), "region": cty.StringVal(v.Region)})}),
		}),
	}}
	// Locals may refer to each other: evaluate until nothing new resolves.
	locals := map[string]cty.Value{}
	pending := map[string]hcl.Expression{}
	for _, b := range m.Blocks("locals") {
		for name, a := range b.Body.Attributes {
			pending[name] = a.Expr
		}
	}
	for len(pending) > 0 {
		ctx.Variables["local"] = cty.ObjectVal(locals)
		progress := false
		for name, expr := range pending {
			val, diags := expr.Value(ctx)
			if diags.HasErrors() || !val.IsWhollyKnown() {
				continue
			}
			locals[name] = val
			delete(pending, name)
			progress = true
		}
		if !progress {
			break // the rest refer to resources; they are not needed here
		}
	}
	ctx.Variables["local"] = cty.ObjectVal(locals)
	resources := map[string]map[string]cty.Value{}
	for _, b := range m.Blocks("resource") {
		if len(b.Labels) != 2 {
			continue
		}
		typ, name := b.Labels[0], b.Labels[1]
		attrs, err := resourceAttrs(ctx, b, part, v)
		if err != nil {
			return nil, fmt.Errorf("resource %s.%s: %w", typ, name, err)
		}
		if attrs == nil {
			continue
		}
		if resources[typ] == nil {
			resources[typ] = map[string]cty.Value{}
		}
		resources[typ][name] = cty.ObjectVal(attrs)
	}
	for typ, byName := range resources {
		ctx.Variables[typ] = cty.ObjectVal(byName)
	}
	return ctx, nil
}

// resourceAttrs computes the attributes other blocks read from the
// resource types the document refers to; nil for other types.
func resourceAttrs(ctx *hcl.EvalContext, b *hclsyntax.Block, part string, v Values) (map[string]cty.Value, error) {
	str := func(attr string) (string, error) {
		a, ok := b.Body.Attributes[attr]
		if !ok {
			return "", nil
		}
		val, diags := a.Expr.Value(ctx)
		if diags.HasErrors() {
			return "", errors.New(diags.Error())
		}
		if val.Type() != cty.String {
			return "", fmt.Errorf("%s is not a string", attr)
		}
		return val.AsString(), nil
	}
	switch b.Labels[0] {
	case "aws_iam_role", "aws_sqs_queue":
	default:
		return nil, nil
	}
	name, err := str("name")
	if err != nil {
		return nil, err
	}
	switch b.Labels[0] {
	case "aws_iam_role":
		path, err := str("path")
		if err != nil {
			return nil, err
		}
		if path == "" {
			path = "/"
		}
		return map[string]cty.Value{"name": cty.StringVal(name),
			"arn": cty.StringVal(fmt.Sprintf("arn:%s:iam::%s:role%s%s", part, v.AccountID, path, name))}, nil
	case "aws_sqs_queue":
		return map[string]cty.Value{"name": cty.StringVal(name),
			"arn": cty.StringVal(fmt.Sprintf("arn:%s:sqs:%s:%s:%s", part, v.Region, v.AccountID, name)),
			"url": cty.StringVal(fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", v.Region, v.AccountID, name))}, nil
	}
	return nil, nil
}

// PolicyJSON renders data "aws_iam_policy_document" <name> as an IAM policy document.
func (m *Module) PolicyJSON(name string, v Values) ([]byte, error) {
	docs := m.Blocks("data", "aws_iam_policy_document", name)
	if len(docs) != 1 {
		return nil, fmt.Errorf("want one data \"aws_iam_policy_document\" %q, found %d", name, len(docs))
	}
	ctx, err := m.EvalContext(v)
	if err != nil {
		return nil, err
	}
	var p iampolicy.Policy
	p.Version = "2012-10-17"
	for _, sb := range docs[0].Body.Blocks {
		if sb.Type != "statement" {
			return nil, fmt.Errorf("policy document %s: block %q is not supported (dynamic blocks are not rendered)", name, sb.Type)
		}
		st, err := statement(ctx, sb)
		if err != nil {
			return nil, fmt.Errorf("policy document %s: %w", name, err)
		}
		p.Statement = append(p.Statement, st)
	}
	return json.MarshalIndent(p, "", "  ")
}

func statement(ctx *hcl.EvalContext, b *hclsyntax.Block) (iampolicy.Statement, error) {
	st := iampolicy.Statement{Effect: "Allow"}
	for name, a := range b.Body.Attributes {
		val, diags := a.Expr.Value(ctx)
		if diags.HasErrors() {
			return st, errors.New(diags.Error())
		}
		switch name {
		case "sid":
			st.Sid = val.AsString()
		case "effect":
			st.Effect = val.AsString()
		case "actions", "not_actions", "resources", "not_resources":
			list, err := strings_(val)
			if err != nil {
				return st, fmt.Errorf("%s: %w", name, err)
			}
			switch name {
			case "actions":
				st.Action = list
			case "not_actions":
				st.NotAction = list
			case "resources":
				st.Resource = list
			default:
				st.NotResource = list
			}
		default:
			return st, fmt.Errorf("statement attribute %q is not supported", name)
		}
	}
	for _, cb := range b.Body.Blocks {
		if cb.Type != "condition" {
			return st, fmt.Errorf("statement %s: block %q is not supported in an identity policy", st.Sid, cb.Type)
		}
		get := func(attr string) (cty.Value, error) {
			a, ok := cb.Body.Attributes[attr]
			if !ok {
				return cty.NilVal, fmt.Errorf("condition without %s", attr)
			}
			v, diags := a.Expr.Value(ctx)
			if diags.HasErrors() {
				return cty.NilVal, errors.New(diags.Error())
			}
			return v, nil
		}
		test, err := get("test")
		if err != nil {
			return st, err
		}
		variable, err := get("variable")
		if err != nil {
			return st, err
		}
		values, err := get("values")
		if err != nil {
			return st, err
		}
		list, err := strings_(values)
		if err != nil {
			return st, err
		}
		if st.Condition == nil {
			st.Condition = map[string]map[string]iampolicy.StringList{}
		}
		op := test.AsString()
		if st.Condition[op] == nil {
			st.Condition[op] = map[string]iampolicy.StringList{}
		}
		st.Condition[op][variable.AsString()] = append(st.Condition[op][variable.AsString()], list...)
	}
	sort.Strings(st.Action)
	return st, nil
}

func strings_(v cty.Value) ([]string, error) {
	if !v.CanIterateElements() {
		return nil, errors.New("want a list of strings")
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.Type() != cty.String {
			return nil, errors.New("want a list of strings")
		}
		out = append(out, strings.TrimSpace(e.AsString()))
	}
	return out, nil
}

// Render loads dir and renders its controller policy.
func Render(dir string, v Values) (*iampolicy.Policy, []byte, error) {
	m, err := Load(dir)
	if err != nil {
		return nil, nil, err
	}
	doc, err := m.PolicyJSON("controller", v)
	if err != nil {
		return nil, nil, err
	}
	p, err := iampolicy.Parse(doc)
	if err != nil {
		return nil, nil, err
	}
	return p, doc, nil
}
