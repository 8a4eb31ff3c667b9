// A batch Emacs serving MCP on a socket (serve-emacs.el), for the SDK
// client tests through --emacs (stdio and HTTP).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../..');

// Starts Emacs serving MCP at SOCKET, with ENV added to its environment;
// resolves to its child process once the socket exists (within 60 s).
export function startServingEmacs(socket, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.EMACS ?? 'emacs',
      ['-Q', '--batch', '-L', path.join(root, 'elisp'), '-l', path.join(here, 'serve-emacs.el')],
      { env: { ...process.env, AGENTQ_MCP_SOCKET: socket, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
    const start = Date.now();
    const poll = setInterval(() => {
      if (fs.existsSync(socket)) {
        clearInterval(poll);
        resolve(child);
      } else if (child.exitCode !== null || Date.now() - start > 60000) {
        clearInterval(poll);
        reject(new Error(`Emacs did not start serving MCP at ${socket} (exit code ${child.exitCode})`));
      }
    }, 20);
  });
}
