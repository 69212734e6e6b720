package dcat

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"meridian/internal/catalog"
	"meridian/internal/rdf"
	"meridian/internal/settings"
	"meridian/internal/stac"
)

// Site is what the feeds need of the deployment: the API root at the caller's public address
// (https://host/api) and the feed settings.
type Site struct {
	Root string
	settings.DCAT
}

// Entry is a catalog record with the parts the feeds describe besides it.
type Entry struct {
	Record       catalog.Record
	Keywords     []catalog.Keyword
	Translations []catalog.Translation
}

// CatalogIRI is the catalog's IRI: the same in every profile and every page.
func (s Site) CatalogIRI() string { return s.Root + "/datasets/dcat/#catalog" }

// DatasetIRI is the IRI of a dataset's description; its distributions and services are
// fragments of the dataset's own address too.
func (s Site) DatasetIRI(id string) string { return s.Root + "/datasets/" + id + "#dataset" }

// graph is one mapping's output: the triples and which of their subjects are shared by many
// records (agents, concepts, vocabulary entries), which a document needs to describe once.
type graph struct {
	*rdf.Graph
	shared    map[string]bool // IRIs of nodes many records describe alike
	own       map[string]bool // IRIs of nodes only this record describes (its URLs), once
	blanks    *int
	publisher rdf.Term // the catalog's publisher, once described
	licence   []rdf.Term
	licensed  bool
}

func newGraph(blanks *int) *graph {
	return &graph{Graph: rdf.NewGraph(), shared: map[string]bool{}, own: map[string]bool{}, blanks: blanks}
}

// reset makes the graph empty for the next record, keeping its storage.
func (g *graph) reset() {
	g.Reset()
	clear(g.shared)
	clear(g.own)
	g.publisher, g.licence, g.licensed = rdf.Term{}, g.licence[:0], false
}

func (g *graph) blank() rdf.Term {
	*g.blanks++
	return rdf.Blank("b" + strconv.Itoa(*g.blanks))
}

// add adds a triple. The mapping makes each of a record's triples once (shared nodes are
// described once by entity), so nothing is looked up.
func (g *graph) add(s rdf.Term, p string, o rdf.Term) { g.Append(s, rdf.IRI(p), o) }

func (g *graph) typed(s rdf.Term, classes ...string) {
	for _, c := range classes {
		g.add(s, rdf.Type, rdf.IRI(c))
	}
}

// entity adds a shared node of the given classes and properties, once, and returns it.
func (g *graph) entity(iri string, classes []string, props ...any) rdf.Term {
	return g.node(g.shared, iri, classes, props...)
}

// ownEntity adds a node of the record's own (a URL of its data, its landing page), once.
func (g *graph) ownEntity(iri string, classes []string, props ...any) rdf.Term {
	return g.node(g.own, iri, classes, props...)
}

func (g *graph) node(set map[string]bool, iri string, classes []string, props ...any) rdf.Term {
	s := rdf.IRI(iri)
	if set[iri] {
		return s
	}
	set[iri] = true
	g.typed(s, classes...)
	for i := 0; i+1 < len(props); i += 2 {
		g.add(s, props[i].(string), props[i+1].(rdf.Term))
	}
	return s
}

// text adds a literal when it is not blank.
func (g *graph) text(s rdf.Term, p, v, lang string) {
	if v = strings.TrimSpace(v); v != "" {
		g.add(s, p, rdf.LangLiteral(v, lang))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// recordContact is a contact as the records query carries it.
type recordContact struct {
	Name, Organization, Email string
	Phones                    []struct{ Value string }
	Roles                     []string
}

func (c recordContact) label() string { return strings.TrimSpace(firstOf(c.Name, c.Organization)) }

func firstOf(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// recordDistribution is one of the record's own distributions as the records query carries it.
type recordDistribution struct {
	ID, Type, Format, URL, Title string
	MediaType                    *string `json:"media_type"`
}

// mapper maps records of one profile for one site.
type mapper struct {
	p    *Profile
	site Site
}

// publisher is the agent who publishes the catalog: the setting, else the site.
func (m mapper) publisher(g *graph) rdf.Term {
	if g.publisher.Value != "" {
		return g.publisher
	}
	name := firstOf(m.site.PublisherName, m.site.SiteName, "Meridian")
	a := m.agent(g, name)
	g.publisher = a
	if m.p == DCATUS && len(m.site.BureauCodes) > 0 {
		// DCAT-US names the agency by its OMB bureau codes: codes of the organization.
		g.typed(a, orgNS+"Organization")
		g.add(a, skosNS+"prefLabel", rdf.String(name))
		for _, c := range m.site.BureauCodes {
			g.add(a, skosNS+"notation", rdf.String(c))
		}
	}
	return a
}

// agent is an organization or person named name: the publisher setting's IRI for the
// publisher, otherwise an IRI of the catalog's made from the name, so every record naming the
// same agent names the same node.
func (m mapper) agent(g *graph, name string) rdf.Term {
	iri := m.site.Root + "/datasets/dcat/#agent-" + digest(name)
	if m.site.PublisherURL != nil && name == m.site.PublisherName {
		iri = *m.site.PublisherURL
	}
	// foaf:name is a plain string: DCAT-US asks xsd:string and refuses a language tag.
	return g.entity(iri, []string{foafNS + "Agent"}, foafNS+"name", rdf.String(name))
}

func digest(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// Catalog maps the catalog node: title, description, publisher, home page (the datasets are
// linked one by one as they are written).
func (m mapper) Catalog(g *graph) rdf.Term {
	c := rdf.IRI(m.site.CatalogIRI())
	g.typed(c, dcatNS+"Catalog")
	title := firstOf(m.site.CatalogTitle, m.site.SiteName, "Meridian")
	g.text(c, dctNS+"title", title, "")
	g.text(c, dctNS+"description", firstOf(m.site.CatalogDescription, "The datasets of "+title+"."), "")
	g.add(c, dctNS+"publisher", m.publisher(g))
	home := strings.TrimSuffix(m.site.Root, "/api") + "/"
	g.add(c, foafNS+"homepage", g.entity(home, []string{foafNS + "Document"}, dctNS+"title", rdf.String(title)))
	return c
}

// Dataset maps one record.
func (m mapper) Dataset(g *graph, e Entry) rdf.Term {
	r := e.Record
	id := r.DatasetID.String()
	ds := rdf.IRI(m.site.DatasetIRI(id))
	lang := recordLanguage(r.Language)
	g.typed(ds, dcatNS+"Dataset")
	g.text(ds, dctNS+"title", r.Title, lang)
	g.text(ds, dctNS+"description", deref(r.Summary), lang)
	for _, t := range e.Translations {
		g.text(ds, dctNS+"title", t.Title, t.Language)
		g.text(ds, dctNS+"description", deref(t.Summary), t.Language)
	}
	g.add(ds, dctNS+"identifier", rdf.String(id))
	g.add(ds, dctNS+"issued", dateTime(r.Created))
	g.add(ds, dctNS+"modified", dateTime(r.Updated))
	landing := m.site.Root + "/datasets/" + id
	g.add(ds, dcatNS+"landingPage", g.ownEntity(landing, []string{foafNS + "Document"}, dctNS+"title", rdf.String(r.Title)))
	m.keywords(g, ds, e, lang)
	if lang != "" {
		g.add(ds, dctNS+"language", g.entity(languageIRI(lang), []string{dctNS + "LinguisticSystem"}))
	}
	if code, ok := euFrequency[deref(r.UpdateFrequency)]; ok {
		g.add(ds, dctNS+"accrualPeriodicity", g.entity(euFrequencies+"/"+code, []string{dctNS + "Frequency"}))
	}
	g.add(ds, dctNS+"accessRights", m.accessRights(g, r.Visibility))
	if v := strings.TrimSpace(deref(r.AccessConstraints)); v != "" {
		rights := g.blank()
		g.typed(rights, dctNS+"RightsStatement")
		g.add(rights, rdf.RDFSNS+"label", rdf.String("Access constraints: "+v))
		g.add(ds, dctNS+"rights", rights)
	}
	contacts := m.contacts(g, ds, r)
	m.extent(g, ds, r)
	if r.SRID != nil && *r.SRID > 0 {
		crs := g.entity(epsg+strconv.Itoa(int(*r.SRID)), []string{dctNS + "Standard"})
		g.add(ds, dctNS+"conformsTo", crs)
	}
	if gsd := r.GSD(); gsd != nil {
		// A raster's pixel size on the ground (catalog.Record.GSD: metres, converted from degrees
		// at the extent's middle latitude for a geographic CRS).
		g.add(ds, dcatNS+"spatialResolutionInMeters", rdf.Typed(rdf.Decimal(*gsd), rdf.XSDNS+"decimal"))
	}
	if v := strings.TrimSpace(deref(r.Lineage)); v != "" {
		prov := g.blank()
		g.typed(prov, dctNS+"ProvenanceStatement")
		g.add(prov, rdf.RDFSNS+"label", rdf.LangLiteral(v, lang))
		g.add(ds, dctNS+"provenance", prov)
	}
	m.quality(g, ds, r, lang)
	if m.p == DCATUS {
		for _, code := range m.site.ProgramCodes {
			ident := g.blank()
			g.typed(ident, admsNS+"Identifier")
			g.add(ident, skosNS+"notation", rdf.String(code))
			g.add(ident, admsNS+"schemaAgency", rdf.String("Federal Program Inventory"))
			g.add(ds, admsNS+"identifier", ident)
		}
	}
	m.distributions(g, ds, e, contacts)
	return ds
}

// recordLanguage is the record's language as a BCP 47 tag in canonical case, "" when unknown.
func recordLanguage(l *string) string {
	if l == nil {
		return ""
	}
	tag, err := catalog.CanonicalLanguage(*l)
	if err != nil {
		return ""
	}
	return tag
}

func dateTime(t time.Time) rdf.Term {
	return rdf.Typed(t.UTC().Format("2006-01-02T15:04:05Z"), rdf.XSDNS+"dateTime")
}

// accessRights names who may access the data in the EU access-right vocabulary.
func (m mapper) accessRights(g *graph, visibility string) rdf.Term {
	code := "NON_PUBLIC"
	switch visibility {
	case "public":
		code = "PUBLIC"
	case "restricted":
		code = "RESTRICTED"
	}
	return g.entity(euAccessRights+"/"+code, []string{dctNS + "RightsStatement"})
}

// keywords are the record's keywords as literals, its theme categories and its keywords from the
// EU data themes or the INSPIRE themes as themes (SKOS concepts of their schemes); GeoDCAT-AP
// also gives the ISO topic categories as such.
func (m mapper) keywords(g *graph, ds rdf.Term, e Entry, lang string) {
	vocab, themes := map[string]bool{}, map[rdf.Term]bool{}
	theme := func(c rdf.Term) {
		if !themes[c] {
			themes[c] = true
			g.add(ds, dcatNS+"theme", c)
		}
	}
	for _, k := range e.Keywords {
		if scheme, code, label, ok := themeOf(k); ok {
			theme(m.concept(g, scheme, code, label))
			vocab[strings.ToLower(k.Keyword)] = true
		}
	}
	for _, kw := range e.Record.Keywords {
		if !vocab[strings.ToLower(kw)] {
			g.text(ds, dcatNS+"keyword", kw, lang)
		}
	}
	for _, t := range e.Record.Themes {
		code := topicCategory(t)
		if code == "" {
			continue
		}
		eu := topicTheme[code]
		theme(m.concept(g, euThemes, eu, euTheme[eu]))
		if m.p == GeoDCATAP {
			g.add(ds, geodcatNS+"topicCategory", m.concept(g, topicScheme, code, words(code)))
		}
	}
}

// themeOf reads a keyword of the EU data themes or the INSPIRE themes, by code or English label.
func themeOf(k catalog.Keyword) (scheme, code, label string, ok bool) {
	vocabulary := strings.TrimSuffix(strings.TrimSpace(deref(k.VocabularyURI)), "/")
	word := strings.TrimSpace(k.Keyword)
	if i := strings.LastIndex(word, "/"); i >= 0 && strings.HasPrefix(word, "http") {
		vocabulary, word = strings.TrimSuffix(word[:i], "/"), word[i+1:]
	}
	var table map[string]string
	switch vocabulary {
	case euThemes:
		table = euTheme
	case inspireThemes:
		table = inspireTheme
	default:
		return "", "", "", false
	}
	for c, l := range table {
		if strings.EqualFold(c, word) || strings.EqualFold(l, word) {
			return vocabulary, c, l, true
		}
	}
	return "", "", "", false
}

// concept is an entry of a concept scheme, with the label and scheme every profile asks of one.
func (m mapper) concept(g *graph, scheme, code, label string) rdf.Term {
	s := g.entity(scheme, []string{skosNS + "ConceptScheme"}, dctNS+"title", rdf.String(schemes[scheme]))
	return g.entity(scheme+"/"+code, []string{skosNS + "Concept"}, skosNS+"prefLabel", rdf.LangLiteral(label, "en"),
		skosNS+"inScheme", s)
}

// parties are the record's contacts as the feeds need them.
type parties struct {
	points    []rdf.Term // vcard:Kind contact points
	publisher rdf.Term
}

// contacts maps the record's contacts: every one is a contact point (vCard); the publisher is
// the contact with role publisher, else the record's source organization, else the publisher
// setting; the first author or originator is the creator; GeoDCAT-AP also names the agents of
// its ISO 19115 roles.
func (m mapper) contacts(g *graph, ds rdf.Term, r catalog.Record) parties {
	var list []recordContact
	_ = json.Unmarshal(r.Contacts, &list)
	var out parties
	publisher, creator := "", ""
	for _, c := range list {
		if c.label() == "" {
			continue
		}
		k := g.blank()
		g.typed(k, vcardNS+"Kind")
		g.add(k, vcardNS+"fn", rdf.String(c.label()))
		if c.Organization != "" {
			g.add(k, vcardNS+"organization-name", rdf.String(c.Organization))
		}
		if c.Email != "" {
			g.add(k, vcardNS+"hasEmail", g.ownEntity("mailto:"+c.Email, m.typing(vcardNS+"Email")))
		}
		if len(c.Phones) > 0 && c.Phones[0].Value != "" {
			tel := "tel:" + telephone.Replace(c.Phones[0].Value)
			g.add(k, vcardNS+"hasTelephone", g.ownEntity(tel, []string{rdf.RDFSNS + "Resource"}))
		}
		g.add(ds, dcatNS+"contactPoint", k)
		out.points = append(out.points, k)
		for _, role := range c.Roles {
			who := firstOf(c.Organization, c.Name)
			switch role {
			case "publisher":
				publisher = firstOf(publisher, who)
			case "author", "originator":
				creator = firstOf(creator, who)
			}
			if m.p == GeoDCATAP && geodcatRoles[role] {
				g.add(ds, geodcatNS+role, m.agent(g, who))
			}
		}
	}
	if name := firstOf(publisher, deref(r.SourceOrganization), m.site.PublisherName); name != "" {
		out.publisher = m.agent(g, name)
		if name == m.site.PublisherName {
			out.publisher = m.publisher(g)
		}
		g.add(ds, dctNS+"publisher", out.publisher)
	}
	if creator != "" {
		g.add(ds, dctNS+"creator", m.agent(g, creator))
	}
	return out
}

// telephone writes a phone number as a tel: URI's digits and separators (RFC 3966).
var telephone = strings.NewReplacer(" ", "-", "(", "", ")", "")

// geodcatRoles are the ISO 19115 responsible-party roles GeoDCAT-AP has properties of.
var geodcatRoles = map[string]bool{"custodian": true, "distributor": true, "originator": true, "principalInvestigator": true,
	"processor": true, "resourceProvider": true, "user": true}

// extent maps the data vintage (temporal coverage) and the extent (spatial coverage: its box as
// WKT, its geometry as GeoJSON).
func (m mapper) extent(g *graph, ds rdf.Term, r catalog.Record) {
	if r.VintageStart.Valid || r.VintageEnd.Valid {
		t := g.blank()
		g.typed(t, dctNS+"PeriodOfTime")
		if r.VintageStart.Valid {
			g.add(t, dcatNS+"startDate", rdf.Typed(r.VintageStart.Time.Format("2006-01-02"), rdf.XSDNS+"date"))
		}
		if r.VintageEnd.Valid {
			g.add(t, dcatNS+"endDate", rdf.Typed(r.VintageEnd.Time.Format("2006-01-02"), rdf.XSDNS+"date"))
		}
		g.add(ds, dctNS+"temporal", t)
	}
	if len(r.BBox) != 4 || r.Extent == nil {
		return
	}
	w, s, e, n := r.BBox[0], r.BBox[1], r.BBox[2], r.BBox[3]
	loc := g.blank()
	g.typed(loc, dctNS+"Location")
	wkt := fmt.Sprintf("POLYGON((%s %s, %s %s, %s %s, %s %s, %s %s))", rdf.Decimal(w), rdf.Decimal(s), rdf.Decimal(e), rdf.Decimal(s),
		rdf.Decimal(e), rdf.Decimal(n), rdf.Decimal(w), rdf.Decimal(n), rdf.Decimal(w), rdf.Decimal(s))
	g.add(loc, dcatNS+"bbox", rdf.Typed(wkt, gspNS+"wktLiteral"))
	geojson := rdf.Typed(string(r.Extent), gspNS+"geoJSONLiteral")
	if m.p == DCATUS {
		// DCAT-US 3 takes the geometry as a literal and the box as decimals of its own class.
		g.add(loc, locnNS+"geometry", geojson)
		box := g.blank()
		g.typed(box, dcatusNS+"GeographicBoundingBox")
		for _, c := range []struct {
			p string
			v float64
		}{{"westBoundingLongitude", w}, {"eastBoundingLongitude", e}, {"southBoundingLatitude", s}, {"northBoundingLatitude", n}} {
			g.add(box, dcatusNS+c.p, rdf.Typed(rdf.Decimal(c.v), rdf.XSDNS+"decimal"))
		}
		g.add(ds, dcatusNS+"geographicBoundingBox", box)
	} else {
		// DCAT-AP and GeoDCAT-AP take locn:geometry as a locn:Geometry node with its serializations.
		geom := g.blank()
		g.typed(geom, locnNS+"Geometry")
		g.add(geom, gspNS+"asGeoJSON", geojson)
		g.add(geom, gspNS+"asWKT", rdf.Typed(wkt, gspNS+"wktLiteral"))
		g.add(loc, locnNS+"geometry", geom)
	}
	g.add(ds, dctNS+"spatial", loc)
}

// quality maps the quality statement (a DQV annotation) and the computed quality scores (DQV
// measurements of the catalog's metrics).
func (m mapper) quality(g *graph, ds rdf.Term, r catalog.Record, lang string) {
	if v := strings.TrimSpace(deref(r.QualityStatement)); v != "" {
		a := g.blank()
		g.typed(a, dqvNS+"QualityAnnotation")
		g.add(a, oaNS+"bodyValue", rdf.LangLiteral(v, lang))
		g.add(a, oaNS+"motivatedBy", g.entity(dqvNS+"qualityAssessment", []string{oaNS + "Motivation"}))
		g.add(ds, dqvNS+"hasQualityAnnotation", a)
	}
	var scores map[string]any
	if json.Unmarshal(r.QualityDetail, &scores) != nil {
		return
	}
	for _, name := range []string{"overall", "metadata_completeness", "attribute_completeness", "geometry_validity", "crs_defined"} {
		v, ok := scores[name].(float64)
		if !ok {
			continue
		}
		mm := g.blank()
		g.typed(mm, dqvNS+"QualityMeasurement")
		g.add(mm, dqvNS+"isMeasurementOf", m.metric(g, name))
		g.add(mm, dqvNS+"value", rdf.Typed(rdf.Decimal(v), rdf.XSDNS+"decimal"))
		g.add(ds, dqvNS+"hasQualityMeasurement", mm)
	}
}

// metric is one of the catalog's quality scores as a DQV metric (0 to 100).
func (m mapper) metric(g *graph, name string) rdf.Term {
	base := m.site.Root + "/datasets/dcat/#"
	dimension := "completeness"
	switch name {
	case "geometry_validity", "crs_defined":
		dimension = "consistency"
	case "overall":
		dimension = "overall"
	}
	dt := g.entity(rdf.XSDNS+"decimal", []string{rdf.RDFSNS + "Datatype"})
	dim := g.entity(base+"dimension-"+dimension, []string{dqvNS + "Dimension"})
	return g.entity(base+"metric-"+name, []string{dqvNS + "Metric"}, dqvNS+"expectedDataType", dt, dqvNS+"inDimension", dim,
		skosNS+"definition", rdf.LangLiteral(strings.ReplaceAll(name, "_", " ")+" score, 0 to 100", "en"))
}

// mediaTypePattern is a media type an IANA entry can name.
var mediaTypePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$`)

// access is what a distribution offers: where, in which form, through which service.
type access struct {
	iri, title, url, mediaType, format string
	download                           bool
	service                            rdf.Term
	conformsTo                         string
}

// distributions maps what the service offers of the dataset (a download per export format; the
// OGC API Features items and the vector tiles as data services; the COG of a raster) and the
// record's own distributions, each with the record's licence and rights.
func (m mapper) distributions(g *graph, ds rdf.Term, e Entry, who parties) {
	r := e.Record
	id := r.DatasetID.String()
	base := m.site.Root + "/datasets/" + id
	var list []access
	for _, d := range r.Generated() {
		// Generated distributions are named by what they are (stable as their ids are).
		a := access{iri: base + "#distribution-" + d.Type + "-" + d.Format, title: deref(d.Title), url: m.site.Root + d.URL,
			mediaType: deref(d.MediaType), format: fileType[deref(d.MediaType)]}
		switch d.Type {
		case "download":
			a.download = true
		case "ogc_api_features":
			a.service = m.service(g, ds, who, base+"#service-features", "OGC API Features: "+r.Title,
				m.site.Root+"/collections/"+id, ogcFeatures)
		case "vector_tiles":
			// The tile template is signed per caller: the token endpoint hands it out.
			a.url = m.site.Root + "/tiles/token/" + id + "/"
			a.service = m.service(g, ds, who, base+"#service-tiles", "Vector tiles: "+r.Title, a.url, vectorTileMVT)
		}
		list = append(list, a)
	}
	if r.RecordType == "raster_dataset" || r.RecordType == "vrt_dataset" {
		list = append(list, access{iri: base + "#distribution-cog", title: "Cloud Optimized GeoTIFF", url: base + "/download/cog",
			mediaType: stac.COGType, format: "GEOTIFF", download: true, conformsTo: cogSpec})
	}
	for _, a := range list {
		m.distribution(g, ds, r, a, "")
	}
	var own []recordDistribution
	_ = json.Unmarshal(r.Distributions, &own)
	for _, d := range own {
		a := access{iri: base + "#distribution-" + d.ID, title: firstOf(d.Title, d.Format), url: d.URL, download: d.Type == "download"}
		if mt := strings.ToLower(strings.TrimSpace(deref(d.MediaType))); mediaTypePattern.MatchString(strings.SplitN(mt, ";", 2)[0]) {
			a.mediaType = mt
		}
		m.distribution(g, ds, r, a, d.Format)
	}
}

func (m mapper) distribution(g *graph, ds rdf.Term, r catalog.Record, a access, formatName string) {
	d := rdf.IRI(a.iri)
	g.typed(d, dcatNS+"Distribution")
	g.text(d, dctNS+"title", a.title, "")
	u := m.resource(g, a.url)
	g.add(d, dcatNS+"accessURL", u)
	if a.download {
		g.add(d, dcatNS+"downloadURL", u)
	}
	if a.mediaType != "" {
		g.add(d, dcatNS+"mediaType", g.entity(mediaTypeIRI(a.mediaType), []string{dctNS + "MediaType"}))
	}
	switch {
	case a.format != "":
		g.add(d, dctNS+"format", g.entity(euFileTypes+"/"+a.format, []string{dctNS + "MediaTypeOrExtent"}))
	case strings.TrimSpace(formatName) != "":
		f := g.blank()
		g.typed(f, dctNS+"MediaTypeOrExtent")
		g.add(f, rdf.RDFSNS+"label", rdf.String(strings.TrimSpace(formatName)))
		g.add(d, dctNS+"format", f)
	}
	if a.conformsTo != "" {
		g.add(d, dctNS+"conformsTo", g.entity(a.conformsTo, []string{dctNS + "Standard"}))
	}
	if a.service.Value != "" {
		g.add(d, dcatNS+"accessService", a.service)
	}
	m.licence(g, d, r)
	g.add(ds, dcatNS+"distribution", d)
}

// resource is a URL as a node GeoDCAT-AP accepts (rdfs:Resource, which it does not infer).
func (m mapper) resource(g *graph, u string) rdf.Term {
	return g.ownEntity(u, m.typing(rdf.RDFSNS+"Resource"))
}

// typing is the class GeoDCAT-AP 3 and DCAT-AP 3's ranges ask of URLs and mailboxes, which a
// validator does not infer: DCAT-US takes any IRI there, so its documents go without them.
func (m mapper) typing(class string) []string {
	if m.p == DCATUS {
		return nil
	}
	return []string{class}
}

// licence gives a distribution or service the record's licence (an SPDX licence where one is
// known, else the text as a licence document of its own) and its usage rights and attribution.
func (m mapper) licence(g *graph, s rdf.Term, r catalog.Record) {
	if !g.licensed {
		g.licensed, g.licence = true, m.licenceNodes(g, r)
	}
	for i := 0; i+1 < len(g.licence); i += 2 {
		g.add(s, g.licence[i].Value, g.licence[i+1])
	}
}

// licenceNodes describe the record's licence and rights once: pairs of property and node.
func (m mapper) licenceNodes(g *graph, r catalog.Record) []rdf.Term {
	var out []rdf.Term
	switch id := stac.License(r.License); id {
	case "proprietary":
	case "other":
		l := g.blank()
		g.typed(l, dctNS+"LicenseDocument")
		g.add(l, rdf.RDFSNS+"label", rdf.String(strings.TrimSpace(*r.License)))
		out = append(out, rdf.IRI(dctNS+"license"), l)
	default:
		iri := spdxLicenses + id
		if u, err := url.Parse(strings.TrimSpace(*r.License)); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			iri = strings.TrimSpace(*r.License)
		}
		out = append(out, rdf.IRI(dctNS+"license"), g.entity(iri, []string{dctNS + "LicenseDocument"}))
	}
	usage := strings.TrimSpace(deref(r.UsageConstraints))
	// The record's rights are its attribution and usage constraints, in that order.
	attribution := strings.Trim(strings.TrimSuffix(strings.TrimSpace(deref(r.Rights)), usage), "; ")
	if usage == "" && attribution == "" {
		return out
	}
	rights := g.blank()
	g.typed(rights, dctNS+"RightsStatement")
	if usage != "" {
		g.add(rights, rdf.RDFSNS+"label", rdf.String(usage))
	}
	if attribution != "" {
		g.add(rights, odrsNS+"attributionText", rdf.String(attribution))
	}
	return append(out, rdf.IRI(dctNS+"rights"), rights)
}

// service is a data service of the dataset: its endpoint, the standard it follows, who
// publishes it (the catalog's publisher, who runs it) and whom to ask (the dataset's contacts).
func (m mapper) service(g *graph, ds rdf.Term, who parties, iri, title, endpoint, standard string) rdf.Term {
	s := rdf.IRI(iri)
	g.typed(s, dcatNS+"DataService")
	g.text(s, dctNS+"title", title, "")
	g.add(s, dcatNS+"endpointURL", m.resource(g, endpoint))
	g.add(s, dcatNS+"endpointDescription", g.entity(m.site.Root+"/openapi.json", m.typing(rdf.RDFSNS+"Resource")))
	g.add(s, dctNS+"conformsTo", g.entity(standard, []string{dctNS + "Standard"}))
	g.add(s, dcatNS+"servesDataset", ds)
	g.add(s, dctNS+"publisher", m.publisher(g))
	for _, k := range who.points {
		g.add(s, dcatNS+"contactPoint", k)
	}
	return s
}
