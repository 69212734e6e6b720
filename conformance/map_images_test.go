package conformance

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

// Pictures of maps and icons: decoded, checked and written anew; SVG rebuilt from an allow-list.

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, h/2, color.NRGBA{R: 200, A: 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dataURI(mediaType string, b []byte) string {
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// uploadIcon posts a multipart form with the file and answers the reply.
func uploadIcon(t *testing.T, token, filename string, data []byte) reply {
	t.Helper()
	return postFileAt(t, httpc, server.APIRoot+"/maps/icons", token, filename, data)
}

func TestMapPictures(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	m := call(t, "POST", "/maps/", map[string]any{"name": "Pictured"}, bearer(owner.Access)...).JSON(t)
	base := "/maps/" + m["id"].(string)
	wantStatus(t, "no thumbnail yet", call(t, "GET", base+"/thumbnail/", nil, bearer(owner.Access)...), 404)

	// A wide PNG with a payload after its end: stored scaled and written anew.
	polyglot := append(pngOf(t, 2000, 40), []byte("<script>alert(1)</script>")...)
	wantStatus(t, "thumbnail", call(t, "PUT", base+"/thumbnail/", map[string]any{"data_uri": dataURI("image/png", polyglot)}, bearer(owner.Access)...), 204)
	r := call(t, "GET", base+"/thumbnail/", nil, bearer(owner.Access)...)
	wantStatus(t, "get thumbnail", r, 200)
	img, err := png.Decode(bytes.NewReader(r.Body))
	if err != nil || img.Bounds().Dx() != 1280 || bytes.Contains(r.Body, []byte("script")) || r.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("stored thumbnail: %v, %v, %d bytes", err, img.Bounds(), len(r.Body))
	}
	if got := call(t, "GET", base, nil, bearer(owner.Access)...).JSON(t); !strings.HasPrefix(got["thumbnail_url"].(string), "/api"+base+"/thumbnail/?v=") {
		t.Fatalf("thumbnail_url: %v", got["thumbnail_url"])
	}
	html := []byte("<html><body>not an image</body></html>")
	wantStatus(t, "HTML as PNG", call(t, "PUT", base+"/thumbnail/", map[string]any{"data_uri": dataURI("image/png", html)}, bearer(owner.Access)...), 422)
	wantStatus(t, "not a data URI", call(t, "PUT", base+"/og-image/", map[string]any{"data_uri": "https://example.org/picture.png"}, bearer(owner.Access)...), 422)
	wantStatus(t, "viewer sets a thumbnail", call(t, "PUT", base+"/thumbnail/", map[string]any{"data_uri": dataURI("image/png", pngOf(t, 4, 4))}, bearer(viewer.Access)...), 404)
	wantStatus(t, "og image", call(t, "PUT", base+"/og-image/", map[string]any{"data_uri": dataURI("image/png", pngOf(t, 1200, 630))}, bearer(owner.Access)...), 204)
	wantStatus(t, "viewer reads a private map's picture", call(t, "GET", base+"/og-image/", nil, bearer(viewer.Access)...), 404)
}

func TestMapIcons(t *testing.T) {
	editor, viewer := newUser(t, "editor"), newUser(t, "viewer")
	icon := pngOf(t, 32, 24)
	if r := uploadIcon(t, viewer.Access, "pin.png", icon); r.Status != 403 {
		t.Fatalf("viewer upload: %d %s", r.Status, r.Body)
	}
	r := uploadIcon(t, editor.Access, "Red Pin.png", icon)
	wantStatus(t, "upload", r, 201)
	ic := r.JSON(t)
	if ic["name"] != "Red Pin" || ic["slug"] != "red-pin" || ic["media_type"] != "image/png" || ic["sprite_id"] != "icon-"+ic["id"].(string) {
		t.Fatalf("icon: %s", r.Body)
	}
	wantStatus(t, "the same icon again", uploadIcon(t, editor.Access, "again.png", icon), 409, "Red Pin")
	wantStatus(t, "too large an icon", uploadIcon(t, editor.Access, "big.png", pngOf(t, 600, 10)), 422)
	wantStatus(t, "not an image", uploadIcon(t, editor.Access, "x.png", []byte{0, 1, 2, 3, 4, 5}), 422)

	svg := `<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10" onload="alert(1)">
<script>alert(2)</script><style>@import url(http://evil.example/x.css);</style>
<foreignObject><iframe src="http://evil.example"/></foreignObject>
<image xlink:href="http://evil.example/track.png"/>
<circle cx="5" cy="5" r="4" fill="url(http://evil.example/#g)" stroke="red"/>
<use xlink:href="#c"/><title>pin</title></svg>`
	r = uploadIcon(t, editor.Access, "pin.svg", []byte(svg))
	wantStatus(t, "svg upload", r, 201)
	id := r.JSON(t)["id"].(string)
	asset := call(t, "GET", "/maps/icons/"+id+"/asset", nil)
	wantStatus(t, "svg asset", asset, 200)
	clean := string(asset.Body)
	for _, bad := range []string{"script", "onload", "style", "foreignObject", "iframe", "image", "evil", "ENTITY", "passwd"} {
		if strings.Contains(clean, bad) {
			t.Fatalf("sanitised SVG still holds %q: %s", bad, clean)
		}
	}
	if !strings.Contains(clean, "<circle") || !strings.Contains(clean, `href="#c"`) || asset.Header.Get("Content-Type") != "image/svg+xml" ||
		!strings.Contains(asset.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("sanitised SVG lost what it may keep: %s %v", clean, asset.Header)
	}

	list := call(t, "GET", "/maps/icons?q=red", nil, bearer(viewer.Access)...).JSON(t)
	if n := len(list["icons"].([]any)); n < 1 {
		t.Fatalf("icons: %v", list)
	}
	idx := call(t, "GET", "/maps/sprites/service.json", nil).JSON(t)
	entry, ok := idx["icon-"+ic["id"].(string)].(map[string]any)
	if !ok || entry["width"] != float64(32) || entry["height"] != float64(24) {
		t.Fatalf("sprite index: %v", idx)
	}
	sheet := call(t, "GET", "/maps/sprites/service.png", nil)
	img, err := png.Decode(bytes.NewReader(sheet.Body))
	if err != nil || img.Bounds().Dx() < 32 || sheet.Header.Get("ETag") == "" {
		t.Fatalf("sprite sheet: %v %v", err, sheet.Header)
	}
}

// png16 is a w x h 16-bit RGBA PNG of zeros, written row by row without building the image: a
// few hundred KB that decode to w*h*8 bytes.
func png16(t *testing.T, w, h int) []byte {
	t.Helper()
	var out bytes.Buffer
	chunk := func(kind string, data []byte) {
		_ = binary.Write(&out, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(kind))
		c.Write(data)
		out.WriteString(kind)
		out.Write(data)
		_ = binary.Write(&out, binary.BigEndian, c.Sum32())
	}
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 16, 6 // 16 bits a channel, RGBA
	chunk("IHDR", ihdr)
	var idat bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := make([]byte, 1+8*w) // filter byte 0, then the pixels
	for range h {
		_, _ = zw.Write(row)
	}
	_ = zw.Close()
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}

// A picture's dimensions are read from its header and capped (IMAGE_MAX_PIXELS, 4096 x 4096 by
// default) before any pixel is decoded: a 4200 x 4200 16-bit PNG of about 140 KB, which
// decodes to 140 MB, is refused at once, and one within the cap is still taken.
func TestPictureDimensionsAreReadBeforeDecoding(t *testing.T) {
	owner := newUser(t, "editor")
	m := call(t, "POST", "/maps/", map[string]any{"name": "Card"}, bearer(owner.Access)...).JSON(t)
	base := "/maps/" + m["id"].(string)
	big := png16(t, 4200, 4200)
	// Thumbnails take the same path, but their data URIs are at most 100,000 characters.
	r := call(t, "PUT", base+"/og-image/", map[string]any{"data_uri": dataURI("image/png", big)}, bearer(owner.Access)...)
	wantStatus(t, "an og image of 4200 x 4200 at 16 bits", r, 422, "IMAGE_MAX_PIXELS")
	wantStatus(t, "an og image within the cap", call(t, "PUT", base+"/og-image/",
		map[string]any{"data_uri": dataURI("image/png", png16(t, 1200, 630))}, bearer(owner.Access)...), 204)
}
