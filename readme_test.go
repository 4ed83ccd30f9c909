package hedge_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestReadmeExamplesMatchExampleFunctions keeps README.md honest: every code block marked
// <!-- example: Name --> must appear, line for line, in the body of the Example function (or
// TestReadme… function) Name, which go test compiles and runs. A block may open with the
// imports a reader needs (import "path", or an import block, then a blank line): each must be
// imported by the file that holds the function.
func TestReadmeExamplesMatchExampleFunctions(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	bodies, imports := exampleBodies(t)
	re := regexp.MustCompile("(?s)<!-- example: ([\\w.]+) -->\\s*```go\\n(.*?)```")
	matches := re.FindAllStringSubmatch(string(readme), -1)
	if len(matches) == 0 {
		t.Fatal("README.md has no marked examples")
	}
	for _, m := range matches {
		name, block := m[1], strings.Split(strings.TrimRight(m[2], "\n"), "\n")
		body, ok := bodies[name]
		if !ok {
			t.Errorf("README.md shows %s, but no such Example function exists", name)
			continue
		}
		paths, rest := splitImports(block)
		for _, p := range paths {
			if !slices.Contains(imports[name], p) {
				t.Errorf("README.md's %s block imports %q, which the Example's file does not import", name, p)
			}
		}
		block = rest
		if !containsRun(body, block) {
			t.Errorf("README.md's %s block is not in the Example function's body; update one of them", name)
		}
	}
}

// splitImports returns the import paths a README block opens with, and the lines after them
// (and after the blank line that ends them).
func splitImports(block []string) (paths, rest []string) {
	i := 0
	quoted := func(l string) string { return strings.Trim(strings.TrimSpace(l), `"`) }
	switch {
	case len(block) > 0 && strings.HasPrefix(block[0], `import "`):
		paths, i = []string{quoted(strings.TrimPrefix(block[0], "import "))}, 1
	case len(block) > 0 && block[0] == "import (":
		for i = 1; i < len(block) && block[i] != ")"; i++ {
			if l := strings.TrimSpace(block[i]); l != "" {
				paths = append(paths, quoted(l))
			}
		}
		i++
	default:
		return nil, block
	}
	for i < len(block) && strings.TrimSpace(block[i]) == "" {
		i++
	}
	return paths, block[i:]
}

func exampleBodies(t *testing.T) (bodies, imports map[string][]string) {
	bodies, imports = map[string][]string{}, map[string][]string{}
	for _, dir := range []string{".", "hedgehttp", "hedgetest", "hedgegrpc", "hedgeotel", "hedgeconfig"} {
		exampleBodiesIn(t, dir, bodies, imports)
	}
	return bodies, imports
}

// exampleBodiesIn adds the Example functions of the package in dir, named "pkg.ExampleX"
// outside the root package, and the imports of the file each is in.
func exampleBodiesIn(t *testing.T, dir string, bodies, imports map[string][]string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	prefix := ""
	if dir != "." {
		prefix = filepath.Base(dir) + "."
	}
	fset := token.NewFileSet()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Example") && !strings.HasPrefix(fn.Name.Name, "TestReadme") {
				continue
			}
			text := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
			var lines []string
			for _, l := range strings.Split(strings.Trim(text, "\n"), "\n") {
				lines = append(lines, strings.TrimPrefix(l, "\t"))
			}
			bodies[prefix+fn.Name.Name] = lines
			for _, im := range file.Imports {
				imports[prefix+fn.Name.Name] = append(imports[prefix+fn.Name.Name], strings.Trim(im.Path.Value, `"`))
			}
		}
	}
}

func containsRun(body, run []string) bool {
	for i := 0; i+len(run) <= len(body); i++ {
		match := true
		for j := range run {
			if body[i+j] != run[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// TestReadmeLinksResolve: every relative link in README.md names a file of the repository,
// and every #anchor a heading of the Markdown file it points into (GitHub's anchors: the
// heading in lower case, punctuation dropped, spaces as hyphens).
func TestReadmeLinksResolve(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := map[string]bool{}
		if src, err := os.ReadFile(file); err == nil {
			inCode := false
			for _, l := range strings.Split(string(src), "\n") {
				if strings.HasPrefix(l, "```") {
					inCode = !inCode
				}
				if !inCode && strings.HasPrefix(l, "#") {
					a[slug(strings.TrimLeft(l, "#"))] = true
				}
			}
		}
		anchors[file] = a
		return a
	}
	links := regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(string(readme), -1)
	if len(links) == 0 {
		t.Fatal("README.md has no links")
	}
	for _, m := range links {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(target, "#")
		if file == "" {
			file = "README.md"
		}
		if _, err := os.Stat(file); err != nil {
			t.Errorf("README.md links to %s, which does not exist", target)
			continue
		}
		if anchor != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[anchor] {
			t.Errorf("README.md links to %s: %s has no heading with that anchor", target, file)
		}
	}
}

// slug is GitHub's anchor for a Markdown heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
