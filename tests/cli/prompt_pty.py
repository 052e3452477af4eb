"""A shell played on a pseudo-terminal, for sign_cli.sh's passphrase prompt tests.

Each case forks a child that becomes a session leader with the pty as its
controlling terminal (the "shell"), which starts `ki key generate NAME` in a
process group of its own and drives it as a user's shell would: typing,
stopping, moving the terminal between groups (bg, fg). The shell's checks
come back to the parent through a pipe, and run_case prints them.
"""
import os
import select
import signal
import sys
import termios
import time
import fcntl

PROMPT = b"passphrase for the new key"


def echo(fd):
    return bool(termios.tcgetattr(fd)[3] & termios.ECHO)


class Shell:
    """The shell's side of one case: the pty, ki's pid, and a deadline."""

    def __init__(self, master, slave):
        self.master, self.slave = master, slave
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        self.deadline = time.time() + 20
        self.pid = None

    def read_until(self, text, out):
        while text not in out and time.time() < self.deadline:
            if select.select([self.master], [], [], 0.1)[0]:
                out += os.read(self.master, 1024)
        return out

    def wait_echo_off(self):
        while echo(self.slave) and time.time() < self.deadline:
            time.sleep(0.01)
        return not echo(self.slave)

    def wait_stopped(self):
        """The signal that stopped ki, -1 if it ended, 0 if neither in time."""
        while time.time() < self.deadline:
            done, st = os.waitpid(self.pid, os.WUNTRACED | os.WNOHANG)
            if done:
                return os.WSTOPSIG(st) if os.WIFSTOPPED(st) else -1
            time.sleep(0.02)
        return 0

    def start_ki(self, ki, home, name, own_group, foreground):
        """Runs ki key generate NAME on the pty, in its own process group
        when own_group (and given the terminal when foreground)."""
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTTOU, signal.SIG_DFL)
            if own_group:
                os.setpgid(0, 0)
                if foreground:
                    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
                    os.tcsetpgrp(self.slave, os.getpid())
                    signal.signal(signal.SIGTTOU, signal.SIG_DFL)
            for fd in (0, 1, 2):
                os.dup2(self.slave, fd)
            env = dict(os.environ, KI_HOME=home)
            env.pop("KI_PASSPHRASE", None)
            os.execve(ki, [ki, "key", "generate", name], env)
        self.pid = pid

    def answer_again(self, out, checks):
        """After the stop: the prompt is written again with echo off, "pw"
        is typed twice, ki ends with 0 and leaves echo on."""
        out = self.read_until(PROMPT, out.split(PROMPT, 1)[1])
        checks.append(("prompt written again", PROMPT in out))
        checks.append(("echo off again", self.wait_echo_off()))
        os.write(self.master, b"pw\n")
        self.read_until(b"again", out)
        self.wait_echo_off()
        os.write(self.master, b"pw\n")
        st = None
        while st is None and time.time() < self.deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                st = status
            else:
                time.sleep(0.05)
        if st is None:  # still asking (or stopped): kill it rather than hang the test
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        checks.append(("exit 0", st is not None and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0))
        checks.append(("echo on after", echo(self.slave)))
        return checks


def run_case(play, label):
    """Forks the shell, which runs play(Shell) and returns its checks as
    (what, passed) pairs; prints them after `label` and says whether all
    passed."""
    master, slave = os.openpty()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            checks = play(Shell(master, slave))
        except Exception as e:
            checks = [("no exception: %r" % e, False)]
        os.write(w, repr(checks).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        data += chunk
    os.waitpid(pid, 0)
    os.close(r)
    os.close(master)
    os.close(slave)
    checks = eval(data.decode()) if data else [("the shell reported", False)]
    ok = all(v for _, v in checks)
    print(("ok  " if ok else "FAIL") + " %s: %s" % (label, ", ".join("%s %s" % (k, v) for k, v in checks)))
    sys.stdout.flush()
    return ok
