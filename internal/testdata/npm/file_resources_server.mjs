// file_resources_server.mjs is a stdio MCP server (TypeScript SDK v1) that
// reads any file: URI it is asked for, for cmd/mcpflow's test that mcpflow
// never asks a stdio server for another user's workspace files
// (TestForeignFileURIs). Test only: it reads whatever the process may.
//
//   node file_resources_server.mjs
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'file-resources', version: '1.0.0' });
server.registerResource('files', new ResourceTemplate('file://{+path}', { list: undefined }),
  { description: 'Any file this process may read', mimeType: 'text/plain' },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: await readFile(fileURLToPath(uri), 'utf8') }] }));
await server.connect(new StdioServerTransport());
