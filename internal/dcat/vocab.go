package dcat

import (
	"strings"
	"unicode"
)

// Controlled vocabularies the feeds name record values in: the EU Publications Office
// authority tables (data themes, languages, frequencies, file types, access rights), the INSPIRE
// registry (themes, topic categories) and IANA media types.
const (
	euThemes       = "http://publications.europa.eu/resource/authority/data-theme"
	euLanguages    = "http://publications.europa.eu/resource/authority/language"
	euFrequencies  = "http://publications.europa.eu/resource/authority/frequency"
	euFileTypes    = "http://publications.europa.eu/resource/authority/file-type"
	euAccessRights = "http://publications.europa.eu/resource/authority/access-right"
	inspireThemes  = "http://inspire.ec.europa.eu/theme"
	topicScheme    = "http://inspire.ec.europa.eu/metadata-codelist/TopicCategory"
	ianaMediaTypes = "https://www.iana.org/assignments/media-types/"
	epsg           = "http://www.opengis.net/def/crs/EPSG/0/"
	spdxLicenses   = "http://spdx.org/licenses/"
)

// schemes are the concept schemes themes come from, with their titles.
var schemes = map[string]string{
	euThemes:      "Data Theme (EU Publications Office)",
	inspireThemes: "INSPIRE themes",
	topicScheme:   "ISO 19115 topic categories (INSPIRE registry)",
}

// euTheme are the EU data themes by code.
var euTheme = map[string]string{
	"AGRI": "Agriculture, fisheries, forestry and food", "ECON": "Economy and finance",
	"EDUC": "Education, culture and sport", "ENER": "Energy", "ENVI": "Environment",
	"GOVE": "Government and public sector", "HEAL": "Health", "INTR": "International issues",
	"JUST": "Justice, legal system and public safety", "REGI": "Regions and cities",
	"SOCI": "Population and society", "TECH": "Science and technology", "TRAN": "Transport",
}

// inspireTheme are the 34 INSPIRE spatial data themes by code.
var inspireTheme = map[string]string{
	"ad": "Addresses", "au": "Administrative units", "rs": "Coordinate reference systems", "gg": "Geographical grid systems",
	"cp": "Cadastral parcels", "gn": "Geographical names", "hy": "Hydrography", "ps": "Protected sites",
	"tn": "Transport networks", "el": "Elevation", "ge": "Geology", "lc": "Land cover", "oi": "Orthoimagery",
	"bu": "Buildings", "so": "Soil", "lu": "Land use", "hh": "Human health and safety",
	"us": "Utility and governmental services", "ef": "Environmental monitoring facilities",
	"pf": "Production and industrial facilities", "af": "Agricultural and aquaculture facilities",
	"su": "Statistical units", "pd": "Population distribution — demography",
	"am": "Area management/restriction/regulation zones and reporting units", "nz": "Natural risk zones",
	"ac": "Atmospheric conditions", "mf": "Meteorological geographical features",
	"of": "Oceanographic geographical features", "sr": "Sea regions", "br": "Bio-geographical regions",
	"hb": "Habitats and biotopes", "sd": "Species distribution", "er": "Energy resources", "mr": "Mineral resources",
}

// topicTheme is the EU data theme of each ISO 19115 topic category.
var topicTheme = map[string]string{
	"farming": "AGRI", "biota": "ENVI", "boundaries": "REGI", "climatologyMeteorologyAtmosphere": "ENVI",
	"economy": "ECON", "elevation": "ENVI", "environment": "ENVI", "geoscientificInformation": "TECH",
	"health": "HEAL", "imageryBaseMapsEarthCover": "ENVI", "intelligenceMilitary": "JUST", "inlandWaters": "ENVI",
	"location": "REGI", "oceans": "ENVI", "planningCadastre": "REGI", "society": "SOCI", "structure": "REGI",
	"transportation": "TRAN", "utilitiesCommunication": "ENER", "extraTerrestrial": "TECH", "disaster": "JUST",
}

// topicCategory is a record's theme category as an ISO 19115 code, case-insensitively; "" when
// it is none.
func topicCategory(s string) string {
	for code := range topicTheme {
		if strings.EqualFold(code, strings.TrimSpace(s)) {
			return code
		}
	}
	return ""
}

// words spells a camel-case code as words ("inlandWaters" -> "Inland waters").
func words(code string) string {
	var b strings.Builder
	for i, r := range code {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte(' ')
			r = unicode.ToLower(r)
		}
		if i == 0 {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// euLanguage are the EU language authority codes of ISO 639-1 languages.
var euLanguage = map[string]string{
	"bg": "BUL", "cs": "CES", "da": "DAN", "de": "DEU", "el": "ELL", "en": "ENG", "es": "SPA", "et": "EST",
	"fi": "FIN", "fr": "FRA", "ga": "GLE", "hr": "HRV", "hu": "HUN", "it": "ITA", "lt": "LIT", "lv": "LAV",
	"mt": "MLT", "nl": "NLD", "pl": "POL", "pt": "POR", "ro": "RON", "sk": "SLK", "sl": "SLV", "sv": "SWE",
	"no": "NOR", "nb": "NOB", "nn": "NNO", "is": "ISL", "ca": "CAT", "eu": "EUS", "gl": "GLG", "ru": "RUS",
	"uk": "UKR", "tr": "TUR", "ar": "ARA", "zh": "ZHO", "ja": "JPN", "ko": "KOR", "sr": "SRP", "sq": "SQI",
	"mk": "MKD", "lb": "LTZ", "cy": "CYM",
}

// languageIRI names a BCP 47 tag's language: the EU authority entry, else the Library of
// Congress ISO 639-1 entry.
func languageIRI(tag string) string {
	primary := strings.ToLower(strings.SplitN(tag, "-", 2)[0])
	if code, ok := euLanguage[primary]; ok {
		return euLanguages + "/" + code
	}
	return "http://id.loc.gov/vocabulary/iso639-1/" + primary
}

// euFrequency is the EU frequency of each ISO 19115 maintenance frequency (as GeoDCAT-AP maps them).
var euFrequency = map[string]string{
	"continual": "UPDATE_CONT", "daily": "DAILY", "weekly": "WEEKLY", "fortnightly": "BIWEEKLY",
	"monthly": "MONTHLY", "quarterly": "QUARTERLY", "biannually": "ANNUAL_2", "annually": "ANNUAL",
	"asNeeded": "AS_NEEDED", "irregular": "IRREG", "notPlanned": "NOT_PLANNED", "unknown": "UNKNOWN",
}

// fileType is the EU file type of each media type the service serves.
var fileType = map[string]string{
	"application/geopackage+sqlite3": "GPKG", "application/geo+json": "GEOJSON", "text/csv": "CSV",
	"application/zip": "SHP", "image/tiff": "GEOTIFF", "application/json": "JSON",
}

// mediaTypeIRI is the IANA entry of a media type, parameters left out.
func mediaTypeIRI(mt string) string {
	base := strings.TrimSpace(strings.SplitN(mt, ";", 2)[0])
	return ianaMediaTypes + strings.ToLower(base)
}

// Standards the service's own endpoints conform to.
const (
	ogcFeatures   = "http://www.opengis.net/spec/ogcapi-features-1/1.0"
	vectorTileMVT = "https://github.com/mapbox/vector-tile-spec/tree/master/2.1"
	cogSpec       = "http://www.opengis.net/spec/COG/1.0"
	geoJSONSpec   = "https://www.rfc-editor.org/rfc/rfc7946"
)
