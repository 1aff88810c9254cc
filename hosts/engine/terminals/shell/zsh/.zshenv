# ahpd starts zsh with ZDOTDIR here, so that its .zshrc is ahpd's: the person's own .zshenv
# is read from where it lives, and ZDOTDIR comes back here for the .zshrc.
__ahpd_zdotdir=$ZDOTDIR
ZDOTDIR=${AHPD_USER_ZDOTDIR:-$HOME}
[[ -f $ZDOTDIR/.zshenv ]] && source $ZDOTDIR/.zshenv
AHPD_USER_ZDOTDIR=$ZDOTDIR
ZDOTDIR=$__ahpd_zdotdir
