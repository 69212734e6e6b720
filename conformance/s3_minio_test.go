//go:build s3

package conformance

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestPresignedUploadToMinIO runs the presigned flow end to end against a real MinIO server
// (`make test-s3` builds it once into .data/tools): real signatures, real multipart rules
// (parts of at least 5 MiB).
func TestPresignedUploadToMinIO(t *testing.T) {
	bin := os.Getenv("MINIO_BIN")
	if bin == "" {
		t.Fatal("MINIO_BIN is not set; run `make test-s3`")
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", itoa(port))
	cmd := exec.Command(bin, "server", filepath.Join(t.TempDir(), "data"), "--address", addr, "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER=meridian", "MINIO_ROOT_PASSWORD=meridian-test-secret")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	mc, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4("meridian", "meridian-test-secret", "")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err = mc.MakeBucket(ctx, "uploads", minio.MakeBucketOptions{}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("MinIO did not come up: %v", err)
	}
	presignedS3Flow(t, addr, "uploads", "meridian", "meridian-test-secret", 5<<20, pointsGeoJSON(120000))
}

func itoa(i int) string { return strconv.Itoa(i) }
