package tfpolicy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2/hclwrite"
)

// TestTerraformIsCanonicallyFormatted: every examples/terraform/*.tf is as
// `terraform fmt` (whose formatter is hclwrite.Format) would leave it.
func TestTerraformIsCanonicallyFormatted(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(exampleDir(), "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no .tf files in %s", exampleDir())
	}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := hclwrite.Format(src); !bytes.Equal(got, src) {
			t.Errorf("%s is not canonically formatted (run terraform fmt); formatted it reads:\n%s", filepath.Base(p), got)
		}
	}
}
