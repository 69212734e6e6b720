package conformance

import (
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

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
