#include "sim/study/slurm_submission.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "platforms/input_error.hpp"

namespace trainsim::sim {
namespace fs = std::filesystem;
namespace {

// What a finished program printed, and how it ended.
struct ProgramOutput {
  int exit_status = 0;  // 127: could not be started
  std::string out;
  std::string err;
};

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

// Runs `argv` (searched on PATH) and collects its output. sbatch prints a
// line or two, so reading stdout to the end before stderr cannot block on a
// full pipe.
ProgramOutput run_program(const std::vector<std::string>& argv) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0)
    throw std::runtime_error(fmt::format("cannot create a pipe to run {}", argv.front()));
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(fmt::format("cannot fork to run {}", argv.front()));
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::execvp(args[0], args.data());
    const char* why = std::strerror(errno);
    (void)!::write(STDERR_FILENO, why, std::strlen(why));
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ProgramOutput output;
  output.out = read_all(out_pipe[0]);
  output.err = read_all(err_pipe[0]);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  output.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return output;
}

std::string trimmed(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos)
    return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

// A job name Slurm shows as is: the study's name with anything unusual
// replaced.
std::string job_name(const std::string& study_name) {
  std::string name = "trainsim-";
  for (char c : study_name)
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return name;
}

// #SBATCH lines are not read by a shell: a path there cannot be quoted.
void require_plain_path(const fs::path& path, const char* what) {
  const std::string text = path.string();
  if (text.find_first_of(" \t\n'\"\\$`") != std::string::npos)
    throw platforms::InputError({fmt::format(
        "--slurm: the {} `{}` has a space or a shell character; #SBATCH lines cannot quote it (choose a "
        "plain path)",
        what, text)});
}

std::string command_line(const std::vector<std::string>& words) {
  std::string line;
  for (const auto& w : words)
    line.append(line.empty() ? "" : " ").append(shell_quote(w));
  return line;
}

// `sbatch --parsable` prints "<job id>" or "<job id>;<cluster>".
std::string submit(const SlurmSweep& sweep, std::vector<std::string> argv, const std::string& what) {
  const ProgramOutput output = run_program(argv);
  if (output.exit_status == 127)
    throw platforms::InputError({fmt::format(
        "--slurm: cannot run `{}` ({}): --slurm submits the study with Slurm's sbatch, which must be on "
        "PATH (or run the shards yourself: sweep --shard I/N, then merge)",
        sweep.sbatch, trimmed(output.err))});
  const std::string id = trimmed(output.out.substr(0, output.out.find(';')));
  if (output.exit_status != 0 || id.empty() || id.find_first_not_of("0123456789_") != std::string::npos)
    throw platforms::InputError(
        {fmt::format("--slurm: sbatch refused the {} (exit status {}): `{}` said: {}", what,
                     output.exit_status, command_line(argv), trimmed(output.err + output.out))});
  return id;
}

}  // namespace

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                              "-_./=:,+%@") == std::string::npos)
    return word;
  std::string quoted = "'";
  for (char c : word)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

fs::path slurm_shard_dir(const fs::path& out_dir, int shard) {
  return out_dir / "shards" / fmt::format("shard-{}", shard);
}

SlurmScripts slurm_scripts(const SlurmSweep& sweep) {
  require_plain_path(sweep.out_dir, "output directory");
  require_plain_path(sweep.working_dir, "working directory");
  const std::string name = job_name(sweep.study_name);
  const fs::path logs = sweep.out_dir / "slurm";
  SlurmScripts scripts;

  std::vector<std::string> shard_command{sweep.trainsim_exe, "sweep", sweep.study};
  shard_command.insert(shard_command.end(), sweep.sweep_arguments.begin(), sweep.sweep_arguments.end());
  scripts.shard_script = fmt::format(
      "#!/bin/bash\n"
      "# trainsim sweep {study} --slurm {n}: array task I runs shard I/{n} of the study into\n"
      "# {out}/shards/shard-I; the merge job (merge.sbatch) combines them into {out}.\n"
      "# Rerun one shard (it resumes its finished points): sbatch --array=I {logs}/shard.sbatch\n"
      "#SBATCH --job-name={name}\n"
      "#SBATCH --array=0-{last}\n"
      "#SBATCH --chdir={cwd}\n"
      "#SBATCH --output={logs}/shard-%a.log\n"
      "set -eu\n"
      "shard=$SLURM_ARRAY_TASK_ID\n"
      "exec {command} --shard \"$shard/{n}\" --out {shards}/shard-\"$shard\"{jobs}\n",
      fmt::arg("study", sweep.study), fmt::arg("n", sweep.shards), fmt::arg("out", sweep.out_dir.string()),
      fmt::arg("logs", logs.string()), fmt::arg("name", name), fmt::arg("last", sweep.shards - 1),
      fmt::arg("cwd", sweep.working_dir.string()), fmt::arg("command", command_line(shard_command)),
      fmt::arg("shards", shell_quote((sweep.out_dir / "shards").string())),
      fmt::arg("jobs", sweep.jobs_from_slurm ? " -j \"${SLURM_CPUS_PER_TASK:-1}\"" : ""));

  std::vector<std::string> merge_command{sweep.trainsim_exe, "merge"};
  for (int i = 0; i < sweep.shards; ++i)
    merge_command.push_back(slurm_shard_dir(sweep.out_dir, i).string());
  merge_command.insert(merge_command.end(), {"--out", sweep.out_dir.string()});
  if (sweep.html)
    merge_command.push_back("--html");
  scripts.merge_script = fmt::format(
      "#!/bin/bash\n"
      "# trainsim sweep {study} --slurm {n}: combines the {n} shards into {out} once the array job\n"
      "# has ended (merge names any shard that did not finish).\n"
      "#SBATCH --job-name={name}-merge\n"
      "#SBATCH --chdir={cwd}\n"
      "#SBATCH --output={logs}/merge.log\n"
      "set -eu\n"
      "exec {command}\n",
      fmt::arg("study", sweep.study), fmt::arg("n", sweep.shards), fmt::arg("out", sweep.out_dir.string()),
      fmt::arg("name", name), fmt::arg("cwd", sweep.working_dir.string()), fmt::arg("logs", logs.string()),
      fmt::arg("command", command_line(merge_command)));
  return scripts;
}

SlurmJobs submit_slurm_sweep(const SlurmSweep& sweep) {
  const SlurmScripts scripts = slurm_scripts(sweep);
  const fs::path dir = sweep.working_dir / sweep.out_dir / "slurm";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw platforms::InputError({fmt::format("{}: cannot create: {}", dir.string(), ec.message())});
  for (const auto& [file, text] :
       {std::pair{"shard.sbatch", &scripts.shard_script}, std::pair{"merge.sbatch", &scripts.merge_script}}) {
    std::ofstream out(dir / file, std::ios::binary);
    out << *text;
    if (!out)
      throw platforms::InputError({fmt::format("{}: cannot write", (dir / file).string())});
  }

  std::vector<std::string> array_argv{sweep.sbatch, "--parsable"};
  array_argv.insert(array_argv.end(), sweep.sbatch_arguments.begin(), sweep.sbatch_arguments.end());
  array_argv.push_back((dir / "shard.sbatch").string());
  SlurmJobs jobs;
  jobs.array_job = submit(sweep, array_argv, "array job of the shards");

  std::vector<std::string> merge_argv{sweep.sbatch, "--parsable",
                                      fmt::format("--dependency=afterany:{}", jobs.array_job),
                                      "--kill-on-invalid-dep=yes"};
  merge_argv.insert(merge_argv.end(), sweep.sbatch_arguments.begin(), sweep.sbatch_arguments.end());
  merge_argv.push_back((dir / "merge.sbatch").string());
  try {
    jobs.merge_job = submit(sweep, merge_argv, "merge job");
  } catch (const platforms::InputError& e) {
    std::vector<std::string> problems = e.problems();
    problems.push_back(fmt::format(
        "the shards were submitted (array job {}); once they have finished, merge them with `sbatch {}` or "
        "run its command yourself",
        jobs.array_job, (dir / "merge.sbatch").string()));
    throw platforms::InputError(problems);
  }
  return jobs;
}

}  // namespace trainsim::sim
