package sqlbuild

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// numbering matches SQL text that numbers its own placeholders: "$" joined to a computed number.
var numbering = regexp.MustCompile(`"\$"\s*\+|'\$'`)

// TestOnlyThisPackageNumbersPlaceholders keeps the rule of this package: dynamic SQL takes its
// placeholders from a Builder. Fixed SQL with fixed placeholders ($1, $2) is fine; computing
// "$" + n anywhere else is what let two numbering schemes meet in one query.
func TestOnlyThisPackageNumbersPlaceholders(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "gen", "store", "node_modules", ".data", "internal/sqlbuild", "tools":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(src), "\n") {
			if numbering.MatchString(line) {
				t.Errorf("%s:%d numbers its own placeholders; use sqlbuild.Builder: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files under %s: the walk is not seeing the repository", checked, root)
	}
}
