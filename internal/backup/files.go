package backup

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// scratch are the directories of DATA_DIR that hold only work in progress (exports being
// written, VRT mosaics being built), which nothing needs after a restart.
var scratch = map[string]bool{"exports": true, "vrt-work": true}

// copyTree copies the regular files under src to dst, keeping their relative paths, modes and
// modification times, and returns how many files and bytes it copied. A file removed while the
// copy runs is skipped (the caller checks that what the database names is there); skip says
// which top-level directories to leave out.
func copyTree(src, dst string, skip map[string]bool) (files, bytes int64, err error) {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return 0, 0, os.MkdirAll(dst, 0o750)
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if filepath.Dir(rel) == "." && skip[rel] {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o750)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		n, err := copyFile(p, filepath.Join(dst, rel))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		files, bytes = files+1, bytes+n
		return err
	})
	return files, bytes, err
}

func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	return n, os.Chtimes(dst, st.ModTime(), st.ModTime())
}

// emptyDir tells whether dir is missing or holds nothing.
func emptyDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	return len(entries) == 0, err
}
