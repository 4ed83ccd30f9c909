//go:build ignore

// apisurface counts a package's exported surface: exported top-level names (types,
// functions, constants, variables), exported methods (on any type: a method of an unexported
// type is reachable through an interface or an exported variable) and exported fields of
// exported struct types. Test files are left out.
//
//	go run scripts/apisurface.go [-v] [dir]
//
// -v lists every name counted.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "list every name counted")
	flag.Parse()
	dir := "."
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		log.Fatal(err)
	}
	var names, methods, fields int
	show := func(kind, name string) {
		if *verbose {
			fmt.Println(kind, name)
		}
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						names++
						show("name", d.Name.Name)
						continue
					}
					methods++
					show("method", recvName(d.Recv.List[0].Type)+"."+d.Name.Name)
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							names++
							show("name", s.Name.Name)
							st, ok := s.Type.(*ast.StructType)
							if !ok {
								continue
							}
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									if n.IsExported() {
										fields++
										show("field", s.Name.Name+"."+n.Name)
									}
								}
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									names++
									show("name", n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	fmt.Printf("%d names, %d methods, %d fields\n", names, methods, fields)
}

func recvName(t ast.Expr) string {
	switch t := t.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}
