// Package mcpclients holds only tests: they drive real, pinned MCP clients
// (the official conformance suite, the TypeScript SDK v1 and v2, Claude
// Code's CLI; npm packages under node_modules, installed by install.sh)
// against the local stack with the demo configuration on 127.0.0.1.
package mcpclients
