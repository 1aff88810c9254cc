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
        # A prompt a theme rebuilds at every prompt loses its marks: they are put back.
        if [[ $PS1 != *'133;B'* ]]; then
            PS1=$'%{\e]133;A\a%}'"${PS1}"$'%{\e]133;B\a%}'
        fi
        return $st
    }

    __ahpd_preexec() {
        print -n "\e]133;C\a"
    }

    # Ours first, so it reads the command's status before another hook changes it.
    precmd_functions=(__ahpd_precmd $precmd_functions)
    preexec_functions+=(__ahpd_preexec)
fi
