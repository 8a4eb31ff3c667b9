// Starts sly-agent-q-mcp --http 0 for the HTTP tests.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

// Starts the binary with ARGS plus --http 0; resolves once it printed its
// URL.  Its stdin is a pipe: closing it stops the server.
export function startHttpServer(args, tokenFile) {
  const binary = process.env.SLY_AGENT_Q_MCP ?? path.join(here, '../../build/sly-agent-q-mcp');
  return new Promise((resolve, reject) => {
    const child = spawn(binary, [...args, '--http', '0', '--http-token-file', tokenFile], { stdio: ['pipe', 'inherit', 'pipe'] });
    let text = '';
    child.stderr.on('data', (chunk) => {
      text += chunk;
      process.stderr.write(chunk);
      const found = text.match(/serving MCP \(Streamable HTTP\) at (http:\/\/127\.0\.0\.1:(\d+)\/mcp)/);
      if (found && text.includes('claude mcp add')) resolve({ child, url: found[1], port: Number(found[2]), text });
    });
    child.on('exit', (code) => reject(new Error(`sly-agent-q-mcp --http exited (${code}) before serving`)));
  });
}

