package handlers

import (
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"meridian/internal/apperr"
	"meridian/internal/blob"
	"meridian/internal/config"
	"meridian/internal/web"
)

// MountStorage serves the local storage backend's presigned PUT URLs under the API's own root
// (blob.PartPath): a browser sends the parts to the origin it talks to and would refuse any
// other. They stand for object storage, not for an operation of the contract, so the signature
// in the URL is their only credential. Bodies are limited to the upload maximum and streamed to
// disk.
func MountStorage(e *echo.Echo, cfg config.Config, s *Server) {
	e.PUT(blob.PartPath+":job/:part", func(c echo.Context) error {
		job, err := uuid.Parse(c.Param("job"))
		if err != nil {
			return apperr.NotFound("no such upload")
		}
		part, err := strconv.Atoi(c.Param("part"))
		if err != nil {
			return apperr.NotFound("no such part")
		}
		q := c.QueryParams()
		etag, err := s.jobs.PutPart(c.Request().Context(), job, part, q.Get("exp"), q.Get("sig"), c.Request().Body)
		if err != nil {
			return err
		}
		c.Response().Header().Set("ETag", `"`+etag+`"`)
		return c.NoContent(http.StatusOK)
	}, web.BodyLimit(cfg.MaxUploadBytes))
}
