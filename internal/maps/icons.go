package maps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image"
	"image/draw"
	"image/png"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/settings"
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
// 409 naming it; one past the icon quotas (settings map_icons.*) answers 422 naming the quota. The
// sprite sheet of the new icon set is built before it answers.
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
	quotas, err := s.Settings.IconQuotas(ctx)
	if err != nil {
		return Icon{}, err
	}
	var pixels int64
	if w != nil && h != nil {
		pixels = int64(*w) * int64(*h)
	}
	sum := sha256.Sum256(clean)
	var row store.InsertMapIconRow
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		if _, err := q.LockIconSet(ctx); err != nil {
			return err
		}
		if dup, err := q.FindMapIconBySHA(ctx, sum[:]); err == nil {
			return apperr.Conflict("the same icon is already uploaded as %q (%s)", dup.Name, dup.ID)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := withinIconQuotas(ctx, q, quotas, p.UserID, pixels); err != nil {
			return err
		}
		row, err = q.InsertMapIcon(ctx, store.InsertMapIconParams{Name: name, Slug: strings.Trim(slugDrop.ReplaceAllString(strings.ToLower(name), "-"), "-"),
			MediaType: mediaType, Data: clean, Sha256: sum[:], Width: w, Height: h, CreatedBy: &p.UserID})
		return err
	})
	if err != nil {
		return Icon{}, err
	}
	s.rebuildSprite(ctx)
	return Icon{ID: row.ID, Name: row.Name, Slug: row.Slug, MediaType: row.MediaType, SizeBytes: int(row.SizeBytes), CreatedAt: row.CreatedAt}, nil
}

// withinIconQuotas refuses an icon of pixels (0 for SVG) that would take user or the deployment
// past its icon quotas.
func withinIconQuotas(ctx context.Context, q *store.Queries, quotas settings.IconQuotas, user uuid.UUID, pixels int64) error {
	u, err := q.IconUsage(ctx, &user)
	switch {
	case err != nil:
		return err
	case u.UserIcons+1 > quotas.PerUser:
		return apperr.Unprocessable("icon quota reached: you have %d icons, at most %d per user (setting map_icons.max_per_user); delete one first",
			u.UserIcons, quotas.PerUser)
	case u.AllIcons+1 > quotas.Total:
		return apperr.Unprocessable("icon quota reached: the deployment holds %d icons, at most %d (setting map_icons.max_total)", u.AllIcons, quotas.Total)
	case u.UserPixels+pixels > quotas.PixelsPerUser:
		return apperr.Unprocessable("icon quota reached: your raster icons hold %d pixels and this one %d, at most %d per user (setting map_icons.max_pixels_per_user); delete one or upload a smaller one",
			u.UserPixels, pixels, quotas.PixelsPerUser)
	case u.AllPixels+pixels > quotas.PixelsTotal:
		return apperr.Unprocessable("icon quota reached: the sprite sheet holds %d pixels and this icon %d, at most %d (setting map_icons.max_pixels_total)",
			u.AllPixels, pixels, quotas.PixelsTotal)
	}
	return nil
}

// DeleteIcon deletes icon id: its uploader or an admin. Styles naming it draw nothing in its place
// (MapLibre's missing image), as they would for any name the sprite lacks.
func (s *Service) DeleteIcon(ctx context.Context, p auth.Principal, id uuid.UUID) error {
	if p.Anonymous() {
		return apperr.Unauthorized("authentication required")
	}
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		if _, err := q.LockIconSet(ctx); err != nil {
			return err
		}
		ic, err := q.GetMapIcon(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("icon %s not found", id)
		}
		if err != nil {
			return err
		}
		if !p.IsAdmin() && (ic.CreatedBy == nil || *ic.CreatedBy != p.UserID) {
			return apperr.Forbidden("only the icon's uploader or an admin may delete it")
		}
		if _, err := q.DeleteMapIcon(ctx, id); err != nil {
			return err
		}
		s.audit(ctx, q, p, AuditIconDelete, "map_icon", id, map[string]any{"name": ic.Name})
		return nil
	})
	if err == nil {
		s.rebuildSprite(ctx)
	}
	return err
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

// spriteCache keeps the sheet of the icon set version last read.
type spriteCache struct {
	mu      sync.Mutex
	version int64
	sheet   Sprite
}

// Sprite answers the sheet of the current icon set. The sheet of each version is built once, by
// the server whose upload or deletion made it, and stored (catalog.map_sprite); readers load it
// and keep it in memory until the icon set moves on. Only a version nobody built (its writer's
// build failed, or the first start after the upgrade) is built here, once per server.
func (s *Service) Sprite(ctx context.Context) (Sprite, error) {
	st, err := s.Q.SpriteState(ctx)
	if err != nil {
		return Sprite{}, err
	}
	s.sprite.mu.Lock()
	defer s.sprite.mu.Unlock()
	if s.sprite.version == st.IconSet && s.sprite.sheet.PNG != nil {
		return s.sprite.sheet, nil
	}
	var sheet Sprite
	version := st.IconSet
	if st.Built == st.IconSet {
		sheet, err = s.storedSprite(ctx)
	} else {
		sheet, version, err = s.buildSprite(ctx)
	}
	if err != nil {
		return Sprite{}, err
	}
	s.sprite.version, s.sprite.sheet = version, sheet
	return sheet, nil
}

// rebuildSprite builds and stores the sheet of the icon set a change just made, so that no
// reader has to; a failure leaves the building to the first reader.
func (s *Service) rebuildSprite(ctx context.Context) {
	if _, _, err := s.buildSprite(ctx); err != nil {
		s.Log.Warn("building the icon sprite sheet failed; the next reader builds it", "err", err)
	}
}

// buildSprite builds the sheet of the current icon set and stores it.
func (s *Service) buildSprite(ctx context.Context) (Sprite, int64, error) {
	var version int64
	var icons []store.SpriteIconsRow
	err := pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		var err error
		if version, err = q.IconSetVersion(ctx); err != nil {
			return err
		}
		icons, err = q.SpriteIcons(ctx)
		return err
	})
	if err != nil {
		return Sprite{}, 0, err
	}
	sheet, err := packSprite(icons)
	if err != nil {
		return Sprite{}, 0, err
	}
	index, err := json.Marshal(sheet.Index)
	if err != nil {
		return Sprite{}, 0, err
	}
	sheet.ETag = spriteETag(version)
	return sheet, version, s.Q.StoreSprite(ctx, store.StoreSpriteParams{IconSet: version, Index: index, Png: sheet.PNG})
}

// storedSprite reads the stored sheet.
func (s *Service) storedSprite(ctx context.Context) (Sprite, error) {
	row, err := s.Q.StoredSprite(ctx)
	if err != nil {
		return Sprite{}, err
	}
	out := Sprite{PNG: row.Png, ETag: spriteETag(row.IconSet)}
	return out, json.Unmarshal(row.Index, &out.Index)
}

func spriteETag(version int64) string {
	sum := sha256.Sum256([]byte("sprite-" + strconv.FormatInt(version, 10)))
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

// packSprite lays the icons out in rows of a sheet at most 1024 pixels wide, by the sizes stored
// with them, then decodes and draws one icon at a time, so the sheet is the only large image in
// memory. An icon that does not decode to its stored size is left out.
func packSprite(icons []store.SpriteIconsRow) (Sprite, error) {
	const width = 1024
	out := Sprite{Index: map[string]SpriteEntry{}}
	type placed struct {
		ic   store.SpriteIconsRow
		x, y int
	}
	var all []placed
	x, y, rowH, sheetW := 0, 0, 0, 1
	for _, ic := range icons {
		if ic.Width == nil || ic.Height == nil || *ic.Width <= 0 || *ic.Height <= 0 {
			continue
		}
		w, h := int(*ic.Width), int(*ic.Height)
		if x+w > width {
			x, y, rowH = 0, y+rowH, 0
		}
		all = append(all, placed{ic, x, y})
		x += w
		rowH = max(rowH, h)
		sheetW = max(sheetW, x)
	}
	sheet := image.NewNRGBA(image.Rect(0, 0, sheetW, max(1, y+rowH)))
	for _, p := range all {
		img, err := png.Decode(bytes.NewReader(p.ic.Data))
		if err != nil || img.Bounds().Dx() != int(*p.ic.Width) || img.Bounds().Dy() != int(*p.ic.Height) {
			continue // stored icons were written by png.Encode at their size; a bad one is left out
		}
		b := img.Bounds()
		draw.Draw(sheet, image.Rect(p.x, p.y, p.x+b.Dx(), p.y+b.Dy()), img, b.Min, draw.Src)
		out.Index["icon-"+p.ic.ID.String()] = SpriteEntry{Width: b.Dx(), Height: b.Dy(), X: p.x, Y: p.y, PixelRatio: 1}
	}
	var buf bytes.Buffer
	// Fastest compression: the sheet is mostly transparent, and is built once per icon set.
	err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, sheet)
	out.PNG = buf.Bytes()
	return out, err
}
