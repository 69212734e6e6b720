package cql2

import (
	"meridian/internal/sqlbuild"
	"strconv"
	"strings"
)

// geographic lists the SRIDs whose x wraps at the antimeridian, where a BBOX with
// minx > maxx crosses it rather than being an error.
func geographic(srid int) bool {
	switch srid {
	case 4326, 4258, 4269, 4283, 4617, 4674, 4937, 4979:
		return true
	}
	return false
}

// geomSQL is a spatial operand: one SQL expression, or the two halves of a BBOX crossing the
// antimeridian.
type geomSQL struct {
	sql, east, west string
}

func (t *translator) spatial(f *Func) {
	info, _ := lookupFunc(f.Name)
	a := t.geomArg(f.Args[0], f.Name)
	b := t.geomArg(f.Args[1], f.Name)
	call := func(x, y string) {
		t.w(info.sql)
		t.w("(")
		t.w(x)
		t.w(", ")
		t.w(y)
		t.w(")")
	}
	split := func(g geomSQL) bool { return g.east != "" }
	switch {
	case !split(a) && !split(b):
		call(a.sql, b.sql)
	// Intersecting the union of the halves is intersecting either; being disjoint from it is
	// being disjoint from both. Two predicates on plain envelopes keep the spatial index usable,
	// where one envelope-of-the-union would cover every longitude.
	case f.Name == "s_intersects" || f.Name == "s_disjoint":
		join := " OR "
		if f.Name == "s_disjoint" {
			join = " AND "
		}
		if split(a) && split(b) {
			// Both halves of both: intersects if any pair does, disjoint if all pairs are.
			t.w("(")
			for i, x := range [2]string{a.east, a.west} {
				for j, y := range [2]string{b.east, b.west} {
					if i+j > 0 {
						t.w(join)
					}
					call(x, y)
				}
			}
			t.w(")")
			break
		}
		g, other, first := a, b.sql, true
		if split(b) {
			g, other, first = b, a.sql, false
		}
		t.w("(")
		for i, half := range [2]string{g.east, g.west} {
			if i > 0 {
				t.w(join)
			}
			if first {
				call(half, other)
			} else {
				call(other, half)
			}
		}
		t.w(")")
	default:
		// Within, contains, equals, touches, overlaps and crosses are not decided half by half
		// (a multipoint with a point on each side is within the union, but within neither
		// half), so these compare with the union itself, a two-polygon multipolygon.
		union := func(g geomSQL) string {
			if split(g) {
				return "ST_Collect(" + g.east + ", " + g.west + ")"
			}
			return g.sql
		}
		call(union(a), union(b))
	}
}

func (t *translator) geomArg(e Expr, fname string) geomSQL {
	switch e := e.(type) {
	case *PropertyRef:
		p := t.prop(e)
		if p.Type != Geometry {
			fail(e.Pos, strings.ToUpper(fname)+" needs geometries, but property "+strconv.Quote(e.Name)+" is "+p.Type.String())
		}
		return geomSQL{sql: t.capture(func() { t.writeProp(p) })}
	case *GeomLit:
		return geomSQL{sql: t.capture(func() { t.geomLiteral(e) })}
	case *BBoxLit:
		return t.bbox(e)
	case *Func:
		t.checkFunc(e)
	}
	fail(e.Position(), strings.ToUpper(fname)+" needs geometries (a geometry property, a WKT or GeoJSON geometry, or a BBOX), not "+t.desc(e))
	return geomSQL{}
}

// literalOpen and literalClose wrap a literal built in the filter CRS: the axis flip comes
// first, as it is part of reading the coordinates, then the reprojection.
func (t *translator) literalOpen() {
	if t.ssrid != t.fsrid {
		t.w("ST_Transform(")
	}
	if t.swap {
		t.w("ST_FlipCoordinates(")
	}
}

func (t *translator) literalClose() {
	t.w(", ")
	t.buf = strconv.AppendInt(t.buf, int64(t.fsrid), 10)
	t.w(")")
	if t.swap {
		t.w(")")
	}
	if t.ssrid != t.fsrid {
		t.w(", ")
		t.buf = strconv.AppendInt(t.buf, int64(t.ssrid), 10)
		t.w(")")
	}
}

func (t *translator) geomLiteral(g *GeomLit) {
	t.literalOpen()
	t.w("ST_GeomFromText(")
	t.param(string(appendWKT(make([]byte, 0, 64), g, g.Z)), "::text")
	t.literalClose()
}

// bbox builds the envelope of a BBOX. With SwapXY the numbers are (lat, lon) pairs and are
// reordered here rather than flipped in SQL, since which of them is the longitude decides
// whether the box crosses the antimeridian. Heights of a 6-number BBOX are checked but not
// used: the predicates are two-dimensional.
func (t *translator) bbox(b *BBoxLit) geomSQL {
	v := b.Vals
	x0, y0, x1, y1 := v[0], v[1], v[2], v[3]
	if len(v) == 6 {
		if v[2] > v[5] {
			fail(b.Pos, "BBOX minimum z ("+ftoa(v[2])+") is greater than its maximum ("+ftoa(v[5])+")")
		}
		x1, y1 = v[3], v[4]
	}
	if t.swap {
		x0, y0, x1, y1 = y0, x0, y1, x1
	}
	if y0 > y1 {
		axis := "y"
		if t.swap {
			axis = "latitude (first axis)"
		}
		fail(b.Pos, "BBOX minimum "+axis+" ("+ftoa(y0)+") is greater than its maximum ("+ftoa(y1)+")")
	}
	if x0 > x1 && !geographic(t.fsrid) {
		fail(b.Pos, "BBOX minimum x ("+ftoa(x0)+") is greater than its maximum ("+ftoa(x1)+")")
	}
	const num = "::double precision"
	ph := func(v float64) string { return t.capture(func() { t.param(v, num) }) }
	px0, py0, px1, py1 := ph(x0), ph(y0), ph(x1), ph(y1)
	// The edges a split adds (180, -180) are constants of ours, written as numbers.
	edge := func(v, sent float64, p string) string {
		if v == sent {
			return p
		}
		return ftoa(v)
	}
	var boxes []string
	for _, span := range sqlbuild.Spans(x0, x1) {
		w, e := edge(span[0], x0, px0), edge(span[1], x1, px1)
		boxes = append(boxes, t.capture(func() {
			t.literalOpenEnv()
			t.w("ST_MakeEnvelope(" + w + ", " + py0 + ", " + e + ", " + py1)
			t.literalCloseEnv()
		}))
	}
	if len(boxes) == 2 {
		return geomSQL{east: boxes[0], west: boxes[1]}
	}
	return geomSQL{sql: boxes[0]}
}

// The envelope is built from already reordered numbers, so it is never flipped.
func (t *translator) literalOpenEnv() {
	if t.ssrid != t.fsrid {
		t.w("ST_Transform(")
	}
}

func (t *translator) literalCloseEnv() {
	t.w(", ")
	t.buf = strconv.AppendInt(t.buf, int64(t.fsrid), 10)
	t.w(")")
	if t.ssrid != t.fsrid {
		t.w(", ")
		t.buf = strconv.AppendInt(t.buf, int64(t.ssrid), 10)
		t.w(")")
	}
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// appendWKT writes the canonical WKT PostGIS parses; both encodings produce the same text.
func appendWKT(b []byte, g *GeomLit, z bool) []byte {
	b = append(b, geomWKT[g.Kind]...)
	if z {
		b = append(b, " Z"...)
	}
	b = append(b, ' ')
	return appendWKTBody(b, g, z)
}

func appendWKTBody(b []byte, g *GeomLit, z bool) []byte {
	dim := 2
	if z {
		dim = 3
	}
	b = append(b, '(')
	switch g.Kind {
	case Point, LineString:
		b = appendPositions(b, g.Coords, dim)
	case GeometryCollection:
		for i := range g.Parts {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendWKT(b, &g.Parts[i], z)
		}
	default: // polygons' rings, multi-geometries' members
		for i := range g.Parts {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendWKTBody(b, &g.Parts[i], z)
		}
	}
	return append(b, ')')
}

func appendPositions(b []byte, c []float64, dim int) []byte {
	for i, v := range c {
		if i > 0 {
			if i%dim == 0 {
				b = append(b, ", "...)
			} else {
				b = append(b, ' ')
			}
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return b
}
