package conformance

import (
	"bytes"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// TestPresignedUploadToS3 runs the presigned flow against S3-compatible storage (gofakes3, in
// process): Meridian presigns PUT and UploadPart URLs with minio-go, the client uploads straight
// to the bucket, and Complete assembles the multipart upload and fetches the object to staging.
// gofakes3 does not check signatures; `make test-s3` runs the same flow against MinIO.
func TestPresignedUploadToS3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("meridian-uploads"); err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(gofakes3.New(backend).Server())
	defer fake.Close()
	presignedS3Flow(t, strings.TrimPrefix(fake.URL, "http://"), "meridian-uploads", "test", "test-secret", 64, pointsGeoJSON(4))
}

// presignedS3Flow starts a server on the given storage and uploads a small single-part file and
// a multipart one (parts of partSize) through presigned URLs, then previews each.
func presignedS3Flow(t *testing.T, endpoint, bucket, key, secret string, partSize int, multipart []byte) {
	s := startFresh(t, "S3_ENDPOINT="+endpoint, "S3_USE_SSL=false", "S3_BUCKET="+bucket, "S3_ACCESS_KEY="+key,
		"S3_SECRET_KEY="+secret, "PRESIGNED_THRESHOLD_BYTES="+strconv.Itoa(partSize), "PRESIGNED_PART_BYTES="+strconv.Itoa(partSize),
		"RATE_LIMIT_ENABLED=false")
	c, _ := NewContract(mustDoc(t), s.APIRoot)
	hc := c.Client()
	tok := callAt(t, hc, s.APIRoot, "POST", "/auth/login", url.Values{"username": {"admin"}, "password": {AdminPassword}}).JSON(t)["access_token"].(string)
	files := map[string][]byte{"single part": []byte(`{"type":"FeatureCollection","features":[]}`), "multipart": multipart}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			r := callAt(t, hc, s.APIRoot, "POST", "/ingest/upload/presigned", map[string]any{"filename": "s3.geojson", "file_size": len(content)}, bearer(tok)...)
			if r.Status != 200 {
				t.Fatalf("presign: %d %s", r.Status, r.Body)
			}
			ps := r.JSON(t)
			urls := ps["urls"].([]any)
			if !strings.Contains(urls[0].(string), endpoint+"/"+bucket+"/uploads/") {
				t.Fatalf("URL does not point at the bucket: %s", urls[0])
			}
			var parts []map[string]any
			for i, u := range urls {
				chunk := content
				if len(urls) > 1 {
					chunk = content[i*partSize : min((i+1)*partSize, len(content))]
				}
				code, etag := putPart(t, u.(string), chunk)
				if code != 200 || etag == "" {
					t.Fatalf("PUT part %d to S3: %d %q", i+1, code, etag)
				}
				parts = append(parts, map[string]any{"part_number": i + 1, "etag": etag})
			}
			body := map[string]any{}
			if len(urls) > 1 {
				body["parts"] = parts
			}
			id := ps["job_id"].(string)
			if r := callAt(t, hc, s.APIRoot, "POST", "/ingest/upload/presigned/"+id+"/complete", body, bearer(tok)...); r.Status != 200 {
				t.Fatalf("complete: %d %s", r.Status, r.Body)
			}
			if r := callAt(t, hc, s.APIRoot, "POST", "/ingest/preview/"+id, map[string]any{}, bearer(tok)...); r.Status != 200 {
				t.Fatalf("preview of the file fetched from S3: %d %s", r.Status, r.Body)
			}
		})
	}
}

// TestRasterCOGInS3 stores a raster dataset's COG in the bucket (gofakes3, in process) and reads
// it back through Download COG by ranged GETs; deleting the dataset removes the object.
func TestRasterCOGInS3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("meridian-rasters"); err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(gofakes3.New(backend).Server())
	defer fake.Close()
	s := startFresh(t, "S3_ENDPOINT="+strings.TrimPrefix(fake.URL, "http://"), "S3_USE_SSL=false", "S3_BUCKET=meridian-rasters",
		"S3_ACCESS_KEY=test", "S3_SECRET_KEY=test-secret", "RATE_LIMIT_ENABLED=false")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	up := uploadAt(t, hc, s.APIRoot, tok, "s3.tif", demTIFF(t, 100, 80))
	id := up.JSON(t)["job_id"].(string)
	if c := callAt(t, hc, s.APIRoot, "POST", "/ingest/commit/"+id, map[string]any{}, bearer(tok)...); c.Status != 202 {
		t.Fatalf("commit: %d %s", c.Status, c.Body)
	}
	job := waitJob(t, hc, s.APIRoot, tok, id, time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
	if job["status"] != "complete" {
		t.Fatalf("job: %v", job)
	}
	ds := job["dataset_id"].(string)
	key := "rasters/" + ds + "/v1.tif"
	obj, err := backend.HeadObject("meridian-rasters", key)
	if err != nil {
		t.Fatalf("the COG is not in the bucket under %s: %v", key, err)
	}
	if _, err := os.Stat(filepath.Join(s.dataDir, "rasters")); err == nil {
		t.Fatal("with S3 configured, COGs are not kept on the local disk")
	}
	path := "/datasets/" + ds + "/download/cog"
	r := callAt(t, hc, s.APIRoot, "GET", path, nil, append(bearer(tok), "Range", "bytes=2-9")...)
	if r.Status != 206 || len(r.Body) != 8 || r.Header.Get("Content-Range") != "bytes 2-9/"+strconv.FormatInt(obj.Size, 10) {
		t.Fatalf("range from S3: %d %v %q", r.Status, r.Header, r.Body)
	}
	whole := callAt(t, hc, s.APIRoot, "GET", path, nil, bearer(tok)...)
	if whole.Status != 200 || int64(len(whole.Body)) != obj.Size || !bytes.Equal(whole.Body[2:10], r.Body) {
		t.Fatalf("whole file from S3: %d, %d bytes of %d", whole.Status, len(whole.Body), obj.Size)
	}
	if d := callAt(t, hc, s.APIRoot, "DELETE", "/datasets/"+ds, nil, bearer(tok)...); d.Status != 204 {
		t.Fatalf("delete: %d", d.Status)
	}
	if _, err := backend.HeadObject("meridian-rasters", key); err == nil {
		t.Fatal("the deleted raster's COG is still in the bucket")
	}
}
