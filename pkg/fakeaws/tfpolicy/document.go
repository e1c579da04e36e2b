package tfpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
)

// Document is a rendered trust or resource policy: statements may name
// principals, which an identity policy (iampolicy.Policy) may not.
type Document struct {
	Version   string              `json:"Version"`
	Statement []DocumentStatement `json:"Statement"`
}

// DocumentStatement is a statement with its principals, by type
// ("Service", "Federated", "AWS", or "*").
type DocumentStatement struct {
	iampolicy.Statement
	Principal map[string]iampolicy.StringList `json:"Principal,omitempty"`
}

// Document renders data "aws_iam_policy_document" <name> with principals
// and with dynamic "statement" blocks expanded over their for_each, as
// Terraform would for v.
func (m *Module) Document(name string, v Values) (*Document, error) {
	docs := m.Blocks("data", "aws_iam_policy_document", name)
	if len(docs) != 1 {
		return nil, fmt.Errorf("want one data \"aws_iam_policy_document\" %q, found %d", name, len(docs))
	}
	ctx, err := m.EvalContext(v)
	if err != nil {
		return nil, err
	}
	d := &Document{Version: "2012-10-17"}
	for _, sb := range docs[0].Body.Blocks {
		switch {
		case sb.Type == "statement":
			st, err := docStatement(ctx, sb)
			if err != nil {
				return nil, fmt.Errorf("policy document %s: %w", name, err)
			}
			d.Statement = append(d.Statement, st)
		case sb.Type == "dynamic" && len(sb.Labels) == 1 && sb.Labels[0] == "statement":
			sts, err := dynamicStatements(ctx, sb)
			if err != nil {
				return nil, fmt.Errorf("policy document %s: %w", name, err)
			}
			d.Statement = append(d.Statement, sts...)
		default:
			return nil, fmt.Errorf("policy document %s: block %s %v is not supported", name, sb.Type, sb.Labels)
		}
	}
	return d, nil
}

// JSON is the document as IAM reads it.
func (d *Document) JSON() ([]byte, error) { return json.MarshalIndent(d, "", "  ") }

// dynamicStatements expands a dynamic "statement" block: its content once
// per for_each element, with statement.key and statement.value set.
func dynamicStatements(ctx *hcl.EvalContext, b *hclsyntax.Block) ([]DocumentStatement, error) {
	fe, ok := b.Body.Attributes["for_each"]
	if !ok {
		return nil, errors.New("dynamic statement without for_each")
	}
	coll, diags := fe.Expr.Value(ctx)
	if diags.HasErrors() {
		return nil, errors.New(diags.Error())
	}
	if !coll.CanIterateElements() {
		return nil, errors.New("dynamic statement: for_each is not a collection")
	}
	var content *hclsyntax.Block
	for _, cb := range b.Body.Blocks {
		if cb.Type == "content" {
			content = cb
		}
	}
	if content == nil {
		return nil, errors.New("dynamic statement without content")
	}
	var out []DocumentStatement
	for it := coll.ElementIterator(); it.Next(); {
		k, val := it.Element()
		inner := ctx.NewChild()
		inner.Variables = map[string]cty.Value{"statement": cty.ObjectVal(map[string]cty.Value{"key": k, "value": val})}
		st, err := docStatement(inner, content)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// docStatement renders a statement (or a dynamic block's content) with its
// principals blocks.
func docStatement(ctx *hcl.EvalContext, b *hclsyntax.Block) (DocumentStatement, error) {
	var principals []*hclsyntax.Block
	rest := *b.Body
	rest.Blocks = nil
	for _, cb := range b.Body.Blocks {
		if cb.Type == "principals" {
			principals = append(principals, cb)
		} else {
			rest.Blocks = append(rest.Blocks, cb)
		}
	}
	stripped := *b
	stripped.Body = &rest
	st, err := statement(ctx, &stripped)
	if err != nil {
		return DocumentStatement{}, err
	}
	ds := DocumentStatement{Statement: st}
	for _, pb := range principals {
		attr := func(name string) (cty.Value, error) {
			a, ok := pb.Body.Attributes[name]
			if !ok {
				return cty.NilVal, fmt.Errorf("principals without %s", name)
			}
			v, diags := a.Expr.Value(ctx)
			if diags.HasErrors() {
				return cty.NilVal, errors.New(diags.Error())
			}
			return v, nil
		}
		typ, err := attr("type")
		if err != nil {
			return ds, err
		}
		ids, err := attr("identifiers")
		if err != nil {
			return ds, err
		}
		list, err := strings_(ids)
		if err != nil {
			return ds, err
		}
		if ds.Principal == nil {
			ds.Principal = map[string]iampolicy.StringList{}
		}
		ds.Principal[typ.AsString()] = append(ds.Principal[typ.AsString()], list...)
		sort.Strings(ds.Principal[typ.AsString()])
	}
	return ds, nil
}

// replaceFunc is Terraform's replace: a substring is replaced, or, when the
// pattern is wrapped in slashes, a regular expression.
var replaceFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "substr", Type: cty.String}, {Name: "replace", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		str, pat, rep := args[0].AsString(), args[1].AsString(), args[2].AsString()
		if len(pat) > 1 && strings.HasPrefix(pat, "/") && strings.HasSuffix(pat, "/") {
			re, err := regexp.Compile(pat[1 : len(pat)-1])
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(re.ReplaceAllString(str, rep)), nil
		}
		return cty.StringVal(strings.ReplaceAll(str, pat, rep)), nil
	},
})
