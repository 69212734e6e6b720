package maps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Icons of point symbols: PNG and WebP up to 512x512 (stored as PNG, written anew), and SVG,
// rebuilt from an allow-list of elements and attributes so that no script, event handler,
// external reference or entity survives.

const (
	maxIconBytes = 1 << 20
	maxIconSide  = 512
)

// Icon is an uploaded icon without its bytes.
type Icon struct {
	ID        uuid.UUID
	Name      string
	Slug      string
	MediaType string
	SizeBytes int
	CreatedAt time.Time
}

var slugDrop = regexp.MustCompile(`[^a-z0-9]+`)

// UploadIcon stores an icon (create_layers). An icon with the same bytes as one stored answers
// 409 naming it.
func (s *Service) UploadIcon(ctx context.Context, p auth.Principal, name string, data []byte) (Icon, error) {
	if !p.Can(auth.CapCreateLayers) {
		return Icon{}, apperr.Forbidden("uploading icons needs the create_layers capability")
	}
	if len(data) > maxIconBytes {
		return Icon{}, apperr.TooLarge("an icon is at most %d bytes", maxIconBytes)
	}
	mediaType, clean, w, h, err := s.cleanIcon(ctx, data)
	if err != nil {
		return Icon{}, err
	}
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 255 {
		return Icon{}, apperr.Unprocessable("name must be 1 to 255 characters")
	}
	sum := sha256.Sum256(clean)
	row, err := s.Q.InsertMapIcon(ctx, store.InsertMapIconParams{Name: name, Slug: strings.Trim(slugDrop.ReplaceAllString(strings.ToLower(name), "-"), "-"),
		MediaType: mediaType, Data: clean, Sha256: sum[:], Width: w, Height: h, CreatedBy: &p.UserID})
	if errors.Is(err, pgx.ErrNoRows) {
		dup, err := s.Q.FindMapIconBySHA(ctx, sum[:])
		if err != nil {
			return Icon{}, err
		}
		return Icon{}, apperr.Conflict("the same icon is already uploaded as %q (%s)", dup.Name, dup.ID)
	}
	if err != nil {
		return Icon{}, err
	}
	s.sprite.forget()
	return Icon{ID: row.ID, Name: row.Name, Slug: row.Slug, MediaType: row.MediaType, SizeBytes: int(row.SizeBytes), CreatedAt: row.CreatedAt}, nil
}

// cleanIcon checks and rewrites an icon: its media type, bytes and (rasters) size.
func (s *Service) cleanIcon(ctx context.Context, data []byte) (string, []byte, *int32, *int32, error) {
	switch sniffed := http.DetectContentType(data); {
	case sniffed == "image/png" || sniffed == "image/webp":
		// The side is checked from the header, before the pixels are decoded.
		_, clean, img, err := s.cleanImage(ctx, sniffed, data, 0, maxIconSide)
		if err != nil {
			return "", nil, nil, nil, err
		}
		b := img.Bounds()
		w, h := int32(b.Dx()), int32(b.Dy())
		return "image/png", clean, &w, &h, nil
	case strings.HasPrefix(sniffed, "text/"):
		clean, err := cleanSVG(data)
		return "image/svg+xml", clean, nil, nil, err
	default:
		return "", nil, nil, nil, apperr.Unprocessable("an icon is a PNG, WebP or SVG file (this one is %s)", sniffed)
	}
}

// svgElements and svgAttributes are what a sanitised SVG may hold.
var (
	svgElements = []string{"svg", "g", "path", "circle", "ellipse", "rect", "line", "polyline", "polygon", "defs",
		"lineargradient", "radialgradient", "stop", "title", "desc", "clippath", "mask", "symbol", "use"}
	svgAttributes = []string{"xmlns", "version", "viewbox", "width", "height", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy",
		"r", "rx", "ry", "fx", "fy", "d", "points", "transform", "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width",
		"stroke-opacity", "stroke-linecap", "stroke-linejoin", "stroke-dasharray", "stroke-dashoffset", "stroke-miterlimit",
		"opacity", "clip-path", "clip-rule", "mask", "id", "offset", "stop-color", "stop-opacity", "gradientunits",
		"gradienttransform", "spreadmethod", "preserveaspectratio", "href"}
	localURL = regexp.MustCompile(`^url\(#[A-Za-z0-9_.:-]+\)$`)
)

// cleanSVG rebuilds an SVG from its allowed elements and attributes. Text content is kept only
// in title and desc; a reference (href, url()) must point inside the document.
func cleanSVG(data []byte) ([]byte, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	dec.Entity = map[string]string{} // no entities beyond XML's own
	var out bytes.Buffer
	enc := xml.NewEncoder(&out)
	skip := 0 // depth inside a dropped element
	var open []string
	root := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, apperr.Unprocessable("the SVG is not well-formed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(t.Name.Local)
			if skip > 0 || !slices.Contains(svgElements, name) {
				skip++
				continue
			}
			if len(open) == 0 {
				if name != "svg" || root {
					return nil, apperr.Unprocessable("the file is not an SVG image")
				}
				root = true
			}
			el := xml.StartElement{Name: xml.Name{Local: t.Name.Local}}
			for _, a := range t.Attr {
				an := strings.ToLower(a.Name.Local)
				v := strings.TrimSpace(a.Value)
				switch {
				case !slices.Contains(svgAttributes, an):
				case an == "href" && !strings.HasPrefix(v, "#"):
				case an == "xmlns":
					el.Attr = append(el.Attr, xml.Attr{Name: xml.Name{Local: "xmlns"}, Value: "http://www.w3.org/2000/svg"})
				case strings.Contains(strings.ToLower(v), "url(") && !localURL.MatchString(v):
				default:
					el.Attr = append(el.Attr, xml.Attr{Name: xml.Name{Local: a.Name.Local}, Value: v})
				}
			}
			open = append(open, name)
			if err := enc.EncodeToken(el); err != nil {
				return nil, err
			}
		case xml.EndElement:
			if skip > 0 {
				skip--
				continue
			}
			open = open[:len(open)-1]
			if err := enc.EncodeToken(xml.EndElement{Name: xml.Name{Local: t.Name.Local}}); err != nil {
				return nil, err
			}
		case xml.CharData:
			if skip == 0 && len(open) > 0 && (open[len(open)-1] == "title" || open[len(open)-1] == "desc") {
				if err := enc.EncodeToken(t); err != nil {
					return nil, err
				}
			}
		}
		// Comments, processing instructions and directives (DOCTYPE, ENTITY) are dropped.
	}
	if !root {
		return nil, apperr.Unprocessable("the file is not an SVG image")
	}
	if err := enc.Flush(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Icons pages through the icons, newest first (any signed-in caller).
func (s *Service) Icons(ctx context.Context, p auth.Principal, q *string, skip, limit int) ([]Icon, int, error) {
	if p.Anonymous() {
		return nil, 0, apperr.Unauthorized("authentication required")
	}
	rows, err := s.Q.ListMapIcons(ctx, store.ListMapIconsParams{Q: q, Lim: int32(limit), Off: int32(skip)})
	out := make([]Icon, len(rows))
	total := 0
	for i, r := range rows {
		out[i] = Icon{ID: r.ID, Name: r.Name, Slug: r.Slug, MediaType: r.MediaType, SizeBytes: int(r.SizeBytes), CreatedAt: r.CreatedAt}
		total = int(r.Total)
	}
	return out, total, err
}

// IconAsset is an icon's file.
func (s *Service) IconAsset(ctx context.Context, id uuid.UUID) (string, []byte, error) {
	ic, err := s.Q.GetMapIcon(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, apperr.NotFound("icon %s not found", id)
	}
	return ic.MediaType, ic.Data, err
}

// Sprite is the sprite sheet of the raster icons and its MapLibre index.
type Sprite struct {
	Index map[string]SpriteEntry
	PNG   []byte
	ETag  string
}

// SpriteEntry is an icon's rectangle in the sheet.
type SpriteEntry struct {
	Width, Height, X, Y int
	PixelRatio          int
}

// spriteCache keeps the last sheet built, with the icon set it was built from.
type spriteCache struct {
	mu      sync.Mutex
	version string
	sheet   Sprite
}

func (c *spriteCache) forget() {
	c.mu.Lock()
	c.version = ""
	c.mu.Unlock()
}

// Sprite answers the sheet, built again only when the icons changed (on any server).
func (s *Service) Sprite(ctx context.Context) (Sprite, error) {
	v, err := s.Q.SpriteVersion(ctx)
	if err != nil {
		return Sprite{}, err
	}
	version := fmt.Sprintf("%d-%d", v.Icons, v.Latest.UnixNano())
	s.sprite.mu.Lock()
	defer s.sprite.mu.Unlock()
	if s.sprite.version == version {
		return s.sprite.sheet, nil
	}
	icons, err := s.Q.SpriteIcons(ctx)
	if err != nil {
		return Sprite{}, err
	}
	sheet, err := packSprite(icons)
	if err != nil {
		return Sprite{}, err
	}
	sum := sha256.Sum256([]byte(version))
	sheet.ETag = `"` + hex.EncodeToString(sum[:8]) + `"`
	s.sprite.version, s.sprite.sheet = version, sheet
	return sheet, nil
}

// packSprite lays the icons out in rows of a sheet at most 1024 pixels wide.
func packSprite(icons []store.SpriteIconsRow) (Sprite, error) {
	const width = 1024
	out := Sprite{Index: map[string]SpriteEntry{}}
	type placed struct {
		img  image.Image
		x, y int
	}
	var all []placed
	x, y, rowH, sheetW := 0, 0, 0, 1
	for _, ic := range icons {
		img, err := png.Decode(bytes.NewReader(ic.Data))
		if err != nil {
			continue // stored icons were written by png.Encode; a bad one is left out
		}
		b := img.Bounds()
		if x+b.Dx() > width {
			x, y, rowH = 0, y+rowH, 0
		}
		all = append(all, placed{img, x, y})
		out.Index["icon-"+ic.ID.String()] = SpriteEntry{Width: b.Dx(), Height: b.Dy(), X: x, Y: y, PixelRatio: 1}
		x += b.Dx()
		rowH = max(rowH, b.Dy())
		sheetW = max(sheetW, x)
	}
	sheet := image.NewNRGBA(image.Rect(0, 0, sheetW, max(1, y+rowH)))
	for _, p := range all {
		draw.Draw(sheet, image.Rect(p.x, p.y, p.x+p.img.Bounds().Dx(), p.y+p.img.Bounds().Dy()), p.img, p.img.Bounds().Min, draw.Src)
	}
	var buf bytes.Buffer
	err := png.Encode(&buf, sheet)
	out.PNG = buf.Bytes()
	return out, err
}
