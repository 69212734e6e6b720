package maps

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/gate"
	"meridian/store"
)

// Uploaded pictures are hostile until decoded: the declared type must be what the bytes are,
// the dimensions are read before the pixels (a small file can claim a huge image), and what is
// stored is the image written anew by Go's encoders, so no metadata, comment or trailing payload
// (a polyglot) survives. WebP, which Go decodes but does not write, is stored as PNG.

// Pictures bounds the decoding of uploaded pictures (thumbnails, OG images, icons): a small
// file can claim a huge image, and a decoded 16-bit RGBA image takes 8 bytes a pixel, so the
// dimensions are read from the header and capped before any pixel is decoded, and only so many
// decodes run at once.
type Pictures struct {
	MaxPixels int64      // IMAGE_MAX_PIXELS; 0: defaultMaxPixels
	Decodes   *gate.Gate // IMAGE_DECODE_CONCURRENCY; nil: unbounded
}

// defaultMaxPixels is 4096 x 4096: more than a map card or a thumbnail ever shows, and 128 MB
// decoded at the worst (16-bit RGBA).
const defaultMaxPixels = 4096 * 4096

// Image kinds of a map.
const (
	ImageThumbnail = "thumbnail"
	ImageOG        = "og_image"
)

// decodeDataURI reads a data: URI of an image in base64.
func decodeDataURI(uri string) (string, []byte, error) {
	head, payload, ok := strings.Cut(uri, ",")
	mediaType, isBase64 := strings.CutSuffix(strings.TrimPrefix(head, "data:"), ";base64")
	if !ok || !strings.HasPrefix(head, "data:") || !isBase64 {
		return "", nil, apperr.Unprocessable("data_uri: expected data:image/png;base64,... (or image/jpeg, image/webp)")
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", nil, apperr.Unprocessable("data_uri: the payload is not base64: %v", err)
	}
	return mediaType, data, nil
}

// cleanImage decodes data as declared (image/png, image/jpeg or image/webp), scales it to
// maxWidth when wider (0: never) and writes it anew: PNG for PNG and WebP, JPEG for JPEG. An
// image larger than maxSide on a side (0: any) or than the pixel cap is refused from its header.
func (s *Service) cleanImage(ctx context.Context, declared string, data []byte, maxWidth, maxSide int) (string, []byte, image.Image, error) {
	sniffed := http.DetectContentType(data)
	if sniffed != declared && !(declared == "image/webp" && sniffed == "image/webp") {
		return "", nil, nil, apperr.Unprocessable("the file is not a %s (its bytes say %s)", declared, sniffed)
	}
	var decodeConfig func([]byte) (image.Config, error)
	var decode func([]byte) (image.Image, error)
	switch declared {
	case "image/png":
		decodeConfig = func(b []byte) (image.Config, error) { return png.DecodeConfig(bytes.NewReader(b)) }
		decode = func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }
	case "image/jpeg":
		decodeConfig = func(b []byte) (image.Config, error) { return jpeg.DecodeConfig(bytes.NewReader(b)) }
		decode = func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }
	case "image/webp":
		decodeConfig = func(b []byte) (image.Config, error) { return webp.DecodeConfig(bytes.NewReader(b)) }
		decode = func(b []byte) (image.Image, error) { return webp.Decode(bytes.NewReader(b)) }
	default:
		return "", nil, nil, apperr.Unprocessable("%s is not an accepted image type (PNG, JPEG, WebP)", declared)
	}
	cfg, err := decodeConfig(data)
	if err != nil {
		return "", nil, nil, apperr.Unprocessable("the image does not decode: %v", err)
	}
	maxPixels := cmp.Or(s.Pictures.MaxPixels, defaultMaxPixels)
	switch {
	case cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxPixels:
		return "", nil, nil, apperr.Unprocessable("the image is %dx%d pixels; at most %d pixels are accepted (IMAGE_MAX_PIXELS)", cfg.Width, cfg.Height, maxPixels)
	case maxSide > 0 && (cfg.Width > maxSide || cfg.Height > maxSide):
		return "", nil, nil, apperr.Unprocessable("the image is %dx%d pixels; at most %dx%d", cfg.Width, cfg.Height, maxSide, maxSide)
	}
	if s.Pictures.Decodes != nil {
		release, err := s.Pictures.Decodes.Enter(ctx, "")
		if err != nil {
			return "", nil, nil, err
		}
		defer release()
	}
	img, err := decode(data)
	if err != nil {
		return "", nil, nil, apperr.Unprocessable("the image does not decode: %v", err)
	}
	if maxWidth > 0 && img.Bounds().Dx() > maxWidth {
		b := img.Bounds()
		h := max(1, b.Dy()*maxWidth/b.Dx())
		dst := image.NewRGBA(image.Rect(0, 0, maxWidth, h))
		xdraw.CatmullRom.Scale(dst, dst.Bounds(), img, b, xdraw.Src, nil)
		img = dst
	}
	var out bytes.Buffer
	if declared == "image/jpeg" {
		err = jpeg.Encode(&out, img, &jpeg.Options{Quality: 90})
	} else {
		declared, err = "image/png", png.Encode(&out, img)
	}
	return declared, out.Bytes(), img, err
}

// PutImage sets a picture of map id from a data: URI (editors of the map).
func (s *Service) PutImage(ctx context.Context, p auth.Principal, id uuid.UUID, kind, dataURI string) error {
	declared, data, err := decodeDataURI(dataURI)
	if err != nil {
		return err
	}
	maxWidth := 1280
	if kind == ImageOG {
		maxWidth = 0
	}
	mediaType, clean, _, err := s.cleanImage(ctx, declared, data, maxWidth, 0)
	if err != nil {
		return err
	}
	_, err = s.change(ctx, p, id, "", func(q *store.Queries, m store.CatalogMap) ([]Event, error) {
		err := q.PutMapImage(ctx, store.PutMapImageParams{MapID: id, Kind: kind, MediaType: mediaType, Data: clean})
		return []Event{{TargetType: "map", TargetID: &id, Action: kind + "_updated", Summary: strings.ReplaceAll(kind, "_", " ") + " updated"}}, err
	})
	return err
}

// Picture is a stored image and how long caches may keep it.
type Picture struct {
	MediaType string
	Data      []byte
	Updated   time.Time
	Public    bool // anyone may see it: shared caches may keep it
}

// Image is a picture of map id, which p may read.
func (s *Service) Image(ctx context.Context, p auth.Principal, id uuid.UUID, kind string) (Picture, error) {
	m, err := s.record(ctx, s.Q, p, id)
	if err != nil {
		return Picture{}, err
	}
	img, err := s.Q.GetMapImage(ctx, store.GetMapImageParams{MapID: id, Kind: kind})
	if errors.Is(err, pgx.ErrNoRows) {
		return Picture{}, apperr.NotFound("the map has no %s", strings.ReplaceAll(kind, "_", " "))
	}
	return Picture{MediaType: img.MediaType, Data: img.Data, Updated: img.UpdatedAt, Public: m.Visibility == auth.VisibilityPublic}, err
}
