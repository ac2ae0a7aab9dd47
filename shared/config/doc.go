// Package config loads the configuration directory (docs/configuration.md):
// settings.json, credentials.json and, for each connection,
// connections/<name>/policy.json and its optional tools/*.json. It validates
// every file strictly (unknown fields, wrong types and invalid values are
// errors, never defaults), expands ${env:NAME} in connection headers, hashes
// plain credential keys, and compiles the endpoints and custom tools into a
// policy.Set.
//
// Every problem is reported as an *Error naming the file, the JSON path
// (endpoints[1].confirm, approvers.webhooks[0].format, [2].choice, ...) and
// what is wrong and allowed; Load collects all problems and returns them
// joined with errors.Join.
package config
