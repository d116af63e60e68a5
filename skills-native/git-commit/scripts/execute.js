// git-commit: validates a Conventional Commits message and commits it in a scratch
// repository inside the workspace (the process's working directory).
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const TYPES = ['feat', 'fix', 'docs', 'style', 'refactor', 'perf', 'test', 'build', 'ci', 'chore', 'revert'];

function readInput() {
  return JSON.parse(fs.readFileSync(0, 'utf8') || '{}');
}

function check(message) {
  const [header, ...body] = message.trim().split('\n');
  const match = /^(\w+)(\([\w.\-/]+\))?(!)?: (.+)$/.exec(header);
  if (!match) throw new Error(`"${header}" is not "type(scope): subject"`);
  const [, type, scope, breaking, subject] = match;
  if (!TYPES.includes(type)) throw new Error(`unknown type "${type}"; use one of ${TYPES.join(', ')}`);
  if (subject.length > 72) throw new Error(`the subject is ${subject.length} characters; keep it under 72`);
  const clean = subject.replace(/\.$/, '');
  return { type, header: `${type}${scope || ''}${breaking || ''}: ${clean}`, body: body.join('\n').trim() };
}

const input = readInput();
const { type, header, body } = check(input.message || '');
const message = body ? `${header}\n\n${body}` : header;
const files = input.files && input.files.length ? input.files : [{ path: 'CHANGES.md', content: `${header}\n` }];

// Git needs a home for its config; the sandbox gives none, so use the workspace.
const env = { PATH: process.env.PATH, HOME: process.cwd(), GIT_CONFIG_NOSYSTEM: '1' };
const git = (...args) => execFileSync('git', args, { env, encoding: 'utf8' }).trim();
git('init', '--quiet', '--initial-branch=main', 'repo');
process.chdir('repo');
for (const file of files) {
  const target = path.resolve(file.path);
  if (!target.startsWith(process.cwd() + path.sep)) throw new Error(`${file.path} is outside the repository`);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.writeFileSync(target, file.content);
}
git('add', '--all');
git('-c', 'user.name=evo', '-c', 'user.email=evo@localhost', 'commit', '--quiet', '-m', message);
console.log(JSON.stringify({ commit: git('rev-parse', 'HEAD'), message, type, files: files.map(f => f.path) }));
