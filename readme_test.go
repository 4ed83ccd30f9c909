package hedge_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeExamplesMatchExampleFunctions keeps README.md honest: every code block marked
// <!-- example: Name --> must appear, line for line, in the body of the Example function (or
// TestReadme… function) Name, which go test compiles and runs.
func TestReadmeExamplesMatchExampleFunctions(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	bodies := exampleBodies(t)
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
		if !containsRun(body, block) {
			t.Errorf("README.md's %s block is not in the Example function's body; update one of them", name)
		}
	}
}

func exampleBodies(t *testing.T) map[string][]string {
	bodies := map[string][]string{}
	for _, dir := range []string{".", "hedgehttp", "hedgetest", "hedgegrpc", "hedgeotel", "hedgeconfig"} {
		exampleBodiesIn(t, dir, bodies)
	}
	return bodies
}

// exampleBodiesIn adds the Example functions of the package in dir, named "pkg.ExampleX"
// outside the root package.
func exampleBodiesIn(t *testing.T, dir string, bodies map[string][]string) {
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
