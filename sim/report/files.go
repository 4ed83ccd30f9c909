package report

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// PrepareDir makes dir ready for the files of a run that has not started: it creates dir if
// needed and checks that a file can be created in it (it creates one and removes it), so that
// a run of minutes is not lost to an output directory it cannot write at the end. undo removes
// the directories PrepareDir created, those still empty, for a run that then writes nothing;
// on an error PrepareDir has removed them already. hedgesim and hedgeload call it for -out.
func PrepareDir(dir string) (undo func(), err error) {
	var created []string // the directories MkdirAll will create, deepest first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) || filepath.Dir(d) == d {
			break
		}
		created = append(created, d)
	}
	remove := func() {
		for _, d := range created {
			os.Remove(d) // fails, harmlessly, on a directory no longer empty
		}
	}
	defer func() {
		if err != nil {
			remove()
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return nil, err
	}
	err = f.Close()
	if rmErr := os.Remove(f.Name()); err == nil {
		err = rmErr
	}
	if err != nil {
		return nil, err
	}
	return remove, nil
}

// WriteFiles writes each of files (name → contents) into dir, creating dir if needed, as one
// set: each goes to a temporary file beside its place, and only once every one is written are
// they renamed into place, so that a failure (a full disk, a name taken by a directory) leaves
// an earlier run's files as they were, not a mix of two runs. The temporary files are removed
// on any error. The files are written in the order of their names, with mode 0644.
func WriteFiles(dir string, files map[string][]byte) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(files))
	temps := map[string]string{} // name → its temporary file, until renamed
	defer func() {
		if err != nil {
			for _, t := range temps {
				os.Remove(t)
			}
		}
	}()
	for _, name := range names {
		target := filepath.Join(dir, name)
		if fi, err := os.Stat(target); err == nil && fi.IsDir() {
			return fmt.Errorf("%s is a directory", target)
		}
		f, err := os.CreateTemp(dir, "."+name+".tmp-*")
		if err != nil {
			return err
		}
		temps[name] = f.Name()
		_, err = f.Write(files[name])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(f.Name(), 0o644) // as os.WriteFile makes it; CreateTemp makes 0600
		}
		if err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
	}
	for _, name := range names {
		if err := os.Rename(temps[name], filepath.Join(dir, name)); err != nil {
			return err
		}
		delete(temps, name)
	}
	return nil
}
