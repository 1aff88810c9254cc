# ahpd's shell integration for zsh: the person's own .zshrc first, then the marks ahpd reads
# off the terminal's output and takes out of it: OSC 133 A (prompt starts), B (command line
# starts), C (command runs), D;<exit status> (command finished) and OSC 7 (the directory).
ZDOTDIR=${AHPD_USER_ZDOTDIR:-$HOME}
unset AHPD_USER_ZDOTDIR __ahpd_zdotdir
[[ -f $ZDOTDIR/.zshrc ]] && source $ZDOTDIR/.zshrc

if [[ -z ${__ahpd_marks-} ]]; then
    __ahpd_marks=1

    __ahpd_precmd() {
        local st=$?
        print -n "\e]133;D;${st}\a\e]7;file://${HOST}${PWD}\a"
        return $st
    }

    # A prompt a theme rebuilds at every prompt (in a precmd hook of its own, which may run
    # after ours) loses its marks: they are put back, last, each time.
    __ahpd_mark_prompt() {
        if [[ $PS1 != *'133;B'* ]]; then
            PS1=$'%{\e]133;A\a%}'"${PS1}"$'%{\e]133;B\a%}'
        fi
    }

    __ahpd_preexec() {
        print -n "\e]133;C\a"
    }

    # Ours first, so it reads the command's status before another hook changes it, and the
    # prompt's marks last, after every hook that builds the prompt. The command runs from the
    # first preexec hook on: what another prints is its output, not the command line.
    precmd_functions=(__ahpd_precmd $precmd_functions __ahpd_mark_prompt)
    preexec_functions=(__ahpd_preexec $preexec_functions)
fi
