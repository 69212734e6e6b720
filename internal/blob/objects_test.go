package blob

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
)

func TestLocalObjectsPutOpenRangeDelete(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	objs := LocalObjects{Dir: dir}
	src := filepath.Join(dir, "staged.tif")
	if err := os.WriteFile(src, []byte("0123456789"), 0o640); err != nil {
		t.Fatal(err)
	}
	key := RasterKey(uuid.MustParse("00000000-0000-0000-0000-000000000001"), 1)
	n, err := objs.PutFile(ctx, key, src)
	if err != nil || n != 10 {
		t.Fatalf("put: %d %v", n, err)
	}
	if _, err := os.Stat(src); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the local backend moves the file, found it still at its source: %v", err)
	}
	o, err := objs.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	buf := make([]byte, 3)
	if _, err := o.ReadAt(buf, 4); err != nil || string(buf) != "456" || o.Size() != 10 {
		t.Fatalf("ReadAt: %q %v size %d", buf, err, o.Size())
	}
	r, err := o.Range(ctx, 7, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	if string(b) != "789" {
		t.Fatalf("Range: %q", b)
	}
	if err := objs.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := objs.Open(ctx, key); !errors.Is(err, ErrNoObject) {
		t.Fatalf("open after delete: %v", err)
	}
	if err := objs.Delete(ctx, key); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	for _, bad := range []string{"../x", "/etc/passwd", "a/../../b", ""} {
		if _, err := objs.Open(ctx, bad); err == nil || errors.Is(err, ErrNoObject) {
			t.Errorf("key %q was not refused: %v", bad, err)
		}
	}
}
