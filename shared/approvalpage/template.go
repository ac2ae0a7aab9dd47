package approvalpage

import (
	_ "embed"
	"html/template"
)

//go:embed page.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Parse(pageSource))
